// Fuzzes ReadSeriesText (every series format titan plan reads: CSV, JSON lines, Prometheus range
// answers, titan load results, recognised by content) and the grid after it: any input ends in a
// series or an error, every bad record counted; no crash, hang or unbounded growth. The first
// byte picks the value expression.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/base/check.h"
#include "src/plan/read_series.h"
#include "src/plan/series.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::plan;
  if (size == 0) return 0;
  static const char* kValues[] = {
      "", "value", "a+b", "ContextTokens+GeneratedTokens", "planned", "tokens_budgeted"};
  const std::string value = kValues[data[0] % 6];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto series = ReadSeriesText(text, "fuzz", value);
  if (!series.ok()) return 0;
  TITAN_CHECK(series->skips.examples.size() <= SkipStats::kMaxExamples);
  for (const auto& [t, v] : series->points) TITAN_CHECK(!std::isnan(t) && !std::isnan(v));
  auto grid = Regularize(*series, data[0] % 2 == 0 ? 60 : 3600,
                         data[0] % 3 == 0 ? Aggregate::kMax : Aggregate::kMean);
  if (grid.ok()) TITAN_CHECK(grid->size() <= kMaxSteps);
  return 0;
}
