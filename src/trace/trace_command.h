// `titan trace`: analyse, summarize, merge profiler traces.
// argv[0] is "titan trace". Returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

namespace titan {
int TraceCommand(int argc, char** argv);
}  // namespace titan
