// Fuzzes the Kineto importer (and, through gzip magic, the streaming gunzip) plus the analyses
// that run on whatever it accepts. Each input is imported three times with batches of a few
// bytes: with seam cuts (json_stream.h) on the calling thread and on two parse threads, and with
// exact cuts only. Threads change nothing, error for error. Seams never change what is read: a
// seam that is not between two events must fail its batch and send the import back to exact
// cuts, so the seam-cut import fails exactly when the exact one does and otherwise reads the same
// events. (Which of two faults in a malformed input is named may differ with the cuts: the bytes
// are read in other pieces.)
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
  auto import = [&](ImportOptions options) {
    options.batch_bytes = 16;
    return titan::trace::ImportTrace(open, "fuzz.json", options);
  };
  auto one = import({.parse_threads = 0, .seam_cut = true});
  auto two = import({.parse_threads = 2, .seam_cut = true});
  auto exact = import({.parse_threads = 0, .seam_cut = false});
  auto fail = [&](const char* what, const auto& a, const auto& b) {
    std::fprintf(stderr, "%s:\n  %s\n  %s\n", what, a.status().ToString().c_str(),
                 b.status().ToString().c_str());
    std::abort();
  };
  if (one.ok() != two.ok() || (!one.ok() && one.status().ToString() != two.status().ToString()) ||
      (one.ok() && !SameEvents(*one, *two))) {
    fail("one and two parse threads disagree", one, two);
  }
  if (one.ok() != exact.ok() || (one.ok() && !SameEvents(*one, *exact))) {
    fail("seam-cut and exact-cut imports disagree", one, exact);
  }
  if (one.ok()) {
    one->rank = 0;
    (void)titan::trace::SummariseRank(*one, {});
    (void)titan::trace::ComputeHtaRank(*one, {});
  }
  return 0;
}
