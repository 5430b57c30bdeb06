// `titan run`: launch a training job; detect, isolate, recover.
// argv[0] is "titan run". Returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

namespace titan {
int RunCommand(int argc, char** argv);
}  // namespace titan
