// Flight-recorder dumps: an interval of every recorded signal, the training processes' steps and
// checkpoints, and the detected transients, as
//  - Chrome/Perfetto trace JSON (opens in ui.perfetto.dev next to a PyTorch profiler trace; the
//    format `titan trace merge` reads):
//      pid 1 "titan agent: signals"  counter events  {"ph":"C","name":<series key>,
//                                                     "ts":<us since epoch>,"args":{"value":v}}
//      pid 2 "training ranks"        tid = rank: "step N" / "checkpoint" slices, marks as instants
//      pid 3 "titan transients"      one slice per transient, args carry the summary
//    Timestamps are wall-clock microseconds since the Unix epoch with nanosecond decimals, the
//    clock PyTorch's profiler uses for `ts` when baseTimeNanoseconds is absent.
//  - CSV: `time_ns,series,value`, one row per recorded point.
//
// Thread safety: reads the registry and event log under their locks; callable from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "src/agent/event_log.h"
#include "src/metrics/registry.h"

namespace titan {

struct DumpRequest {
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  std::string match;  // only series whose key contains this (empty: all)
};

void RenderPerfettoDump(const MetricRegistry& registry, const EventLog& log,
                        const DumpRequest& request, std::string* out);
void RenderCsvDump(const MetricRegistry& registry, const DumpRequest& request, std::string* out);

// Writes a Perfetto dump to `path` atomically (tmp + rename). Errors name the path.
Status WritePerfettoDump(const MetricRegistry& registry, const EventLog& log,
                         const DumpRequest& request, const std::string& path);

}  // namespace titan
