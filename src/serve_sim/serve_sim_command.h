// `titan serve-sim`: a simulated continuous-batching LLM server.
// argv[0] is "titan serve-sim". Returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

namespace titan {
int ServeSimCommand(int argc, char** argv);
}  // namespace titan
