#include "src/trace/importers/legacy/legacy_importer.h"

#include <fmt/format.h>

namespace titan::trace {

Status LegacyAutogradImporter::Finish(bool saw_events, RankTrace* out) const {
  out->format = TraceFormat::kLegacyAutograd;
  out->wall_clock = false;
  if (out->stats.events > 0 && out->stats.complete_events == 0) {
    return InvalidArgumentError(fmt::format(
        "{}: a JSON array with no complete ('X') events with ts and dur; not a profiler trace",
        out->path));
  }
  return OkStatus();
}

}  // namespace titan::trace
