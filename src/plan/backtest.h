// Rolling-origin backtest of forecasters on one regular series, with no look-ahead: at each
// origin o a model sees values[0, o) only and forecasts values[o, o + horizon).
//
// Scores (per model, over all origins):
//   mase      mean over origins of MAE(point) / the in-sample mean absolute error of the
//             seasonal naive forecast with a one-day period over values[0, o) (Hyndman &
//             Koehler 2006; the period is stated in the result)
//   smape     mean of 200 |y - f| / (|y| + |f|) in percent, 0/0 counted as 0
//   pinball   per quantile level q: mean of max(q (y - f_q), (q - 1)(y - f_q)), in the series'
//             unit
//   scaled_pinball  per quantile level: the pinball loss scaled as MASE is (mean over origins of
//             the origin's mean loss / its in-sample seasonal naive error): unitless, so that
//             series of different sizes average (the M5 competition's scaled pinball loss;
//             at 0.5 it is half of MASE for a model whose median is its point)
//   coverage  per central interval (levels q and 1 - q both forecast): the share of actual
//             values inside [f_q, f_(1-q)], keyed by its nominal width ("0.9" for 5%-95%)
//   calibration  per level: the share of actual values below f_q (q when calibrated)
// Steps whose actual value is a gap are not scored.
// Forecasts made elsewhere (R, Prophet) on the same origins are scored the same way
// (ReadExternalForecasts).
//
// Thread safety: RunBacktest runs forecasts on `threads` threads; pure otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/plan/forecast.h"
#include "src/plan/series.h"

namespace titan::plan {

struct BacktestOptions {
  int64_t horizon_steps = 0;
  int origins = 16;             // evenly spaced from min_train_steps to size - horizon
  int64_t min_train_steps = 0;  // 0: two weeks and a day where the series allows, else half
  std::vector<double> levels = {0.05, 0.5, 0.95, 0.99};
  std::vector<std::string> models = {"titan", "seasonal_naive"};
  int threads = 1;
};

struct ModelScore {
  std::string model;
  double mase = 0, smape = 0;
  std::map<double, double> pinball;         // level -> loss
  std::map<double, double> scaled_pinball;  // level -> loss / in-sample scale (see above)
  std::map<std::string, double> coverage;   // "0.9" -> share inside
  std::map<double, double> calibration;     // level -> share below
  double seconds_per_forecast = 0;          // 0 for external forecasts
  int origins = 0;                          // origins scored
  std::string note;                         // e.g. what the model chose at the last origin
};

// One origin's forecast of one model, as written by or for other tools.
struct OriginForecast {
  size_t origin = 0;                                // steps of history
  std::vector<double> point;                        // [h]
  std::map<double, std::vector<double>> quantiles;  // level -> [h]
};

struct BacktestResult {
  std::string series_name;
  double step_seconds = 0;
  int64_t horizon_steps = 0;
  int64_t season_steps = 0;  // MASE's seasonal-naive period (one day)
  std::vector<size_t> origins;
  std::vector<double> origin_times;  // seconds
  std::vector<double> levels;
  std::vector<ModelScore> scores;  // in the order of options.models, then external models
  std::string default_model = "titan";
  // The forecasts, model -> one per origin (kept for the report and for --export).
  std::map<std::string, std::vector<OriginForecast>> forecasts;
};

// The origins RunBacktest uses (errors when the series is too short for `origins` of them).
Result<std::vector<size_t>> BacktestOrigins(const RegularSeries& series,
                                            const BacktestOptions& options);

Result<BacktestResult> RunBacktest(const RegularSeries& series, const BacktestOptions& options);

// Scores forecasts made elsewhere on result->origins and appends them to result->scores.
Status ScoreExternal(const RegularSeries& series, const std::string& model,
                     const std::vector<OriginForecast>& forecasts, BacktestResult* result);

// Reads forecasts of other tools: CSV with a header `model,origin,h,point,<level>...` (h from
// 1, levels as numbers: "0.05"), one row per model, origin and step. Errors name file:line.
Result<std::map<std::string, std::vector<OriginForecast>>> ReadExternalForecasts(
    std::string_view text, const std::string& source);

// {"kind": "titan.plan.backtest", "default_model": ..., "models": {NAME: {"mase", "smape",
// "pinball": {"0.05": ...}, "scaled_pinball": {"0.05": ...}, "coverage": {"0.9": ...},
// "calibration", "seconds_per_forecast", "origins"}}, "series": ..., "horizon_steps",
// "step_seconds", "mase_scale", "origins": [...]}
nlohmann::json BacktestJson(const BacktestResult& result);
// The table for people.
std::string FormatBacktest(const BacktestResult& result);

// "0.05" for 0.05: the shortest form that reads back exactly (JSON keys, CSV headers).
std::string LevelKey(double level);

}  // namespace titan::plan
