// `titan ckpt`: ls, inspect, verify, diff, gc, cp.
// argv[0] is "titan ckpt". Returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

namespace titan {
int CkptCommand(int argc, char** argv);
}  // namespace titan
