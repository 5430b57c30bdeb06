// The legacy autograd profiler's Chrome trace: a bare JSON array of 'X' events with
// pid "CPU functions", no categories, timestamps in microseconds from the profiler's start (no
// shared clock across ranks), ProfilerStep#N spans when a schedule was used. CPU only.
#pragma once

#include "src/trace/importers/importer.h"

namespace titan::trace {

class LegacyAutogradImporter : public TraceImporter {
 public:
  std::string_view name() const override { return "legacy-autograd"; }
  bool Accepts(TopLevel top_level) const override { return top_level == TopLevel::kArray; }
  EventParseOptions event_options() const override {
    EventParseOptions options;
    options.default_kind = EventKind::kCpuOp;
    return options;
  }
  Status Finish(bool saw_events, RankTrace* out) const override;
};

}  // namespace titan::trace
