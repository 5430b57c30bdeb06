// `titan demo`: the 2 nodes x 2 workers DDP demo with faults, recovery and a report.
// argv[0] is "titan demo". Returns the process exit code: 0 success, 1 failure, 2 usage error.
#pragma once

#include <string>
#include <string_view>

namespace titan {
int DemoCommand(int argc, char** argv);

// The rank that a titan agent transient's summary names as a straggler ("rank 3 late against its
// peers (straggler score 4.4): a straggler holding the others"; "rank 0 alone of 4 ranks, 5
// steps: a straggler"), with the summary up to that claim in *claim; -1 when it names none
// ("a blip, not a straggler", "a common cause, not a straggler", "not one straggler").
int StragglerNamedIn(std::string_view summary, std::string* claim);
}  // namespace titan
