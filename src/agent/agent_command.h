// `titan agent`: the per-node daemon (sample, detect, record, serve).
// argv[0] is "titan agent". Returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

namespace titan {
int AgentCommand(int argc, char** argv);
}  // namespace titan
