// Fuzzes the Kineto importer (and, through gzip magic, the streaming gunzip) plus the analyses
// that run on whatever it accepts. Each input is imported twice: on one thread with exact cuts,
// and on two parse threads with seam cuts every few bytes (json_stream.h); the two must agree,
// error for error (a seam that is not between two events must fail its batch and send the import
// back to exact cuts, never change what is read).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/trace/analyses/hta_compat.h"
#include "src/trace/analyses/rank_summary.h"
#include "src/trace/importers/importer.h"

namespace {

using titan::trace::ImportOptions;
using titan::trace::RankTrace;

bool SameEvents(const RankTrace& a, const RankTrace& b) {
  if (a.ops.size() != b.ops.size() || a.collectives.size() != b.collectives.size() ||
      a.stats.events != b.stats.events || a.stats.malformed() != b.stats.malformed() ||
      a.stats.missing_fields != b.stats.missing_fields ||
      a.first_op_is_first_event != b.first_op_is_first_event || a.hta_float_ts != b.hta_float_ts ||
      a.hta_dur_float != b.hta_dur_float || a.warnings != b.warnings) {
    return false;
  }
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const auto &x = a.ops[i], &y = b.ops[i];
    if (x.ts_ns != y.ts_ns || x.dur_ns != y.dur_ns || x.kind != y.kind || x.tid != y.tid ||
        x.collective != y.collective || a.Name(x) != b.Name(y)) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  auto open = titan::trace::MemoryOpener(input, "fuzz.json");
  auto exact = titan::trace::ImportTrace(open, "fuzz.json", ImportOptions{.seam_cut = false});
  auto seams = titan::trace::ImportTrace(
      open, "fuzz.json", ImportOptions{.parse_threads = 2, .seam_cut = true, .batch_bytes = 16});
  if (exact.ok() != seams.ok() ||
      (!exact.ok() && exact.status().ToString() != seams.status().ToString()) ||
      (exact.ok() && !SameEvents(*exact, *seams))) {
    std::fprintf(stderr, "exact and seam-cut imports disagree:\n  %s\n  %s\n",
                 exact.status().ToString().c_str(), seams.status().ToString().c_str());
    std::abort();
  }
  if (exact.ok()) {
    exact->rank = 0;
    (void)titan::trace::SummariseRank(*exact, {});
    (void)titan::trace::ComputeHtaRank(*exact, {});
  }
  return 0;
}
