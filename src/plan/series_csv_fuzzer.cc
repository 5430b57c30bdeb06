// Fuzzes ReadSeriesCsv and the grid after it: any input ends in a series or an error, every bad
// row counted; no crash, hang or unbounded growth. The first byte picks the value expression.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/base/check.h"
#include "src/plan/series.h"
#include "src/plan/series_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::plan;
  if (size == 0) return 0;
  static const char* kValues[] = {"", "value", "a+b", "ContextTokens+GeneratedTokens", "planned"};
  const std::string value = kValues[data[0] % 5];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto series = ReadSeriesCsv(text, "fuzz", value);
  if (!series.ok()) return 0;
  TITAN_CHECK(series->skips.examples.size() <= SkipStats::kMaxExamples);
  auto grid = Regularize(*series, 60, Aggregate::kMax);
  if (grid.ok()) TITAN_CHECK(grid->size() <= kMaxSteps);
  return 0;
}
