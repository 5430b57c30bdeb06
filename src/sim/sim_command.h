// `titan sim`: project failures, checkpoints and scaling.
// argv[0] is "titan sim". Returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

namespace titan {
int SimCommand(int argc, char** argv);
}  // namespace titan
