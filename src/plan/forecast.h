// Forecasters: a regular series' history -> its next `horizon_steps` values as quantiles.
//
// Models (one registry, MakeForecaster):
//   titan           titan's default (titan_model.h): a robust seasonal profile (daily and weekly
//                   Fourier terms, bisquare-weighted), a level the forecast reverts to and the
//                   speed of that reversion, chosen per series by an inner rolling-origin
//                   backtest on the history alone; quantiles from that backtest's errors.
//   seasonal_naive  the value one day earlier (one week with --period 1w); Gaussian intervals
//                   from the in-sample seasonal differences growing with the square root of the
//                   days ahead, as R's forecast::snaive.
// Gaps (NaN) in the history are allowed; the history needs at least kMinHistorySteps values.
// Quantiles are monotone in q, and never below 0 for a series that never was.
//
// Thread safety: a Forecaster is immutable; Predict may run on several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/plan/series.h"

namespace titan::plan {

inline constexpr size_t kMinHistorySteps = 8;

struct Forecast {
  std::string model;
  double start_seconds = 0;  // time of the first forecast step
  double step_seconds = 0;
  std::vector<double> quantile_levels;         // as asked, ascending
  std::vector<std::vector<double>> quantiles;  // [level][h], h < horizon
  std::vector<double> point;                   // the median (MAE-optimal), [h]
  std::string description;                     // what the model chose, for people
};

class Forecaster {
 public:
  virtual ~Forecaster() = default;
  virtual std::string_view name() const = 0;
  // `levels`: ascending, each in (0, 1). Errors: too short a history (INVALID_ARGUMENT,
  // saying how much is needed).
  virtual Result<Forecast> Predict(const RegularSeries& history, int64_t horizon_steps,
                                   const std::vector<double>& levels) const = 0;
};

// "titan", "seasonal_naive"; nullptr for anything else.
std::unique_ptr<Forecaster> MakeForecaster(std::string_view name);
// The names MakeForecaster knows, comma-separated.
std::string ForecasterNames();

// Shared by the models: puts the quantiles in order at each step (no crossing) and, when
// `non_negative`, clips them and the point at 0.
void FinishForecast(bool non_negative, Forecast* forecast);

// Standard normal quantile function (Acklam's rational approximation refined by one Halley
// step: |error| < 1e-12).
double NormalQuantile(double p);

}  // namespace titan::plan
