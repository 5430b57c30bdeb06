// `titan trace merge`: one Chrome/Perfetto trace with the ranks' profiler traces and the titan
// agent's flight-recorder counters on one clock.
//
// The agent's recorder dump (format shared with src/agent, see docs/trace.md) is Chrome trace
// JSON: {"traceEvents": [{"ph": "C", "name": "<series key>", "pid": "titan agent",
// "ts": <microseconds since the Unix epoch>, "args": {"value": <number>}}, ...]}.
// Rank events are rewritten onto epoch microseconds (Kineto's ts plus baseTimeNanoseconds) and
// put under a process per rank ("rank N: <pid>"); counters are copied as they are. Everything
// is streamed: memory stays bounded by one batch of events.
// Thread safety: single-threaded.
#pragma once

#include <string>
#include <vector>

#include "src/base/status.h"

namespace titan::trace {

struct MergeStats {
  uint64_t rank_events = 0;
  uint64_t agent_events = 0;
  std::vector<std::string> warnings;
};

Result<MergeStats> MergeTelemetry(const std::vector<std::string>& trace_files,
                                  const std::string& agent_dump, const std::string& out_path);

}  // namespace titan::trace
