// Fuzzes ReadExternalForecasts (other tools' forecasts for a backtest): forecasts or an error;
// every forecast's quantiles are as long as its points.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/check.h"
#include "src/plan/backtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::plan;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto forecasts = ReadExternalForecasts(text, "fuzz");
  if (!forecasts.ok()) return 0;
  for (const auto& [model, list] : *forecasts) {
    for (const OriginForecast& f : list) {
      for (const auto& [q, values] : f.quantiles) TITAN_CHECK(values.size() == f.point.size());
    }
  }
  return 0;
}
