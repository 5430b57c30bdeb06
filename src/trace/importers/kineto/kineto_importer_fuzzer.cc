// Fuzzes the Kineto importer (and, through gzip magic, the streaming gunzip) plus the analyses
// that run on whatever it accepts.
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/trace/analyses/hta_compat.h"
#include "src/trace/analyses/rank_summary.h"
#include "src/trace/importers/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  auto source = titan::trace::MemorySource(input, "fuzz.json");
  auto trace = titan::trace::ImportTrace(source.get(), "fuzz.json");
  if (trace.ok()) {
    trace->rank = 0;
    (void)titan::trace::SummariseRank(*trace, {});
    (void)titan::trace::ComputeHtaRank(*trace, {});
  }
  return 0;
}
