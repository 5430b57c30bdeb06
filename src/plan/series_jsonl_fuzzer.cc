// Fuzzes ReadSeriesJsonl: any input ends in a series or an error, every bad line counted.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/base/check.h"
#include "src/plan/series.h"
#include "src/plan/series_jsonl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::plan;
  if (size == 0) return 0;
  static const char* kValues[] = {"", "value", "tokens_budgeted", "a+b"};
  const std::string value = kValues[data[0] % 4];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto series = ReadSeriesJsonl(text, "fuzz", value);
  if (!series.ok()) return 0;
  for (const auto& [t, v] : series->points) TITAN_CHECK(t == t && v == v);
  auto grid = Regularize(*series, 3600, Aggregate::kMean);
  if (grid.ok()) TITAN_CHECK(grid->size() <= kMaxSteps);
  return 0;
}
