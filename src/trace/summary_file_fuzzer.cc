// Fuzzes the node summary reader (summaries come from other nodes: outside input), then what a
// merge does with whatever it accepts: re-encoding must give a document that decodes to the same
// bytes, and the cross-rank analysis and every output must run on it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "src/base/check.h"
#include "src/trace/analyses/cross_rank.h"
#include "src/trace/report.h"
#include "src/trace/summary_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  titan::Result<titan::trace::NodeSummary> node = titan::trace::DecodeSummary(input, "fuzz.json");
  if (!node.ok()) return 0;
  const std::string encoded = titan::trace::EncodeSummary(*node);
  titan::Result<titan::trace::NodeSummary> again = titan::trace::DecodeSummary(encoded, "again");
  TITAN_CHECK(again.ok());
  TITAN_CHECK(titan::trace::EncodeSummary(*again) == encoded);

  titan::trace::AnalysisResult result;
  result.errors = node->errors;
  result.ranks = std::move(node->ranks);
  result.hta = std::move(node->hta);
  result.cross = titan::trace::AnalyseAcrossRanks(result.ranks, 5);
  (void)titan::trace::JsonReport(result, node->options.hta_compat);
  static FILE* null = std::fopen("/dev/null", "w");
  for (bool full : {false, true}) {
    titan::trace::PrintTextReport(result, {.hta_compat = node->options.hta_compat, .full = full},
                                  null);
  }
  return 0;
}
