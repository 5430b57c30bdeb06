// Fuzzes the legacy autograd-profiler importer: the input is made a top-level array.
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/trace/analyses/rank_summary.h"
#include "src/trace/importers/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input = "[" + std::string(reinterpret_cast<const char*>(data), size);
  auto trace =
      titan::trace::ImportTrace(titan::trace::MemoryOpener(input, "fuzz.json"), "fuzz.json");
  if (trace.ok()) {
    trace->rank = 0;
    (void)titan::trace::SummariseRank(*trace, {});
  }
  return 0;
}
