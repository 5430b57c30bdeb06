// Kineto JSON (torch.profiler's export_chrome_trace / tensorboard_trace_handler): an object with
// `traceEvents` and metadata members `distributedInfo` (rank, world_size, backend, pg_config),
// `deviceProperties` and `baseTimeNanoseconds` (timestamps are then relative to it).
#pragma once

#include "src/trace/importers/importer.h"

namespace titan::trace {

class KinetoImporter : public TraceImporter {
 public:
  std::string_view name() const override { return "kineto"; }
  bool Accepts(TopLevel top_level) const override { return top_level == TopLevel::kObject; }
  EventParseOptions event_options() const override { return {}; }
  Status OnMember(std::string_view key, simdjson::dom::element value, const OffsetMap& offsets,
                  RankTrace* out) const override;
  Status Finish(bool saw_events, RankTrace* out) const override;
};

}  // namespace titan::trace
