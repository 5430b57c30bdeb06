// `titan demo`: the 2 nodes x 2 workers DDP demo with faults, recovery and a report.
// argv[0] is "titan demo". Returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

namespace titan {
int DemoCommand(int argc, char** argv);
}  // namespace titan
