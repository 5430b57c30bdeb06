// Fuzzes ReadSeriesJson (Prometheus range answers, titan load results): a series or an error;
// samples are finite.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/check.h"
#include "src/plan/series_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::plan;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto series = ReadSeriesJson(text, "fuzz", "");
  if (!series.ok()) return 0;
  for (const auto& [t, v] : series->points) TITAN_CHECK(std::isfinite(t) && std::isfinite(v));
  return 0;
}
