// `titan predict backtest`: rolling-origin evaluation without look-ahead. Origins run from
// `split` every `every` while origin + horizon is observed. Each model is fitted on landmark
// rows whose whole horizon ended by the origin (so no outcome after the origin is used),
// refitted once `refit` has passed since its last fit, and scores every component in service
// at each origin from features known at that origin (src/predict/features.h). Metrics
// (src/predict/metrics.h) per component and per unit key (node_name, slot_name: a unit's P is
// 1 - prod(1 - P of its components), its outcome any failure among them).
//
// JSON: {"default_model": NAME,
//        "models": {NAME: {"c_index", "c_index_uno", "auc", "brier", "calibration_slope",
//                          "precision_at", "recall_at", "lift_at", "rows", "events"}},
//        "units": {KEY: {"models": {NAME: {...the same}}}},
//        "default_vs_cox_batch_age": {"c_index_gain", "lift_at_0.1_ratio"},
//        "horizon_days", "every_days", "refit_days", "split", "origins", "fits",
//        "training_rows", "features", "seconds"}
// The `_at` maps are keyed "0.01", "0.05", "0.1".
//
// Thread safety: pure function.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/fleet/history.h"
#include "src/predict/features.h"

namespace titan::predict {

struct BacktestOptions {
  double split_seconds = 0;
  double horizon_seconds = 30 * kDaySeconds;
  double every_seconds = 15 * kDaySeconds;
  double refit_seconds = 180 * kDaySeconds;
  // Training rows: landmarks every horizon; every failure and this share of the rest.
  double train_fraction = 0.05;
  std::vector<std::string> models;  // empty: all (ModelNames())
};

Result<nlohmann::json> RunBacktest(const fleet::FleetHistory& history,
                                   const BacktestOptions& options);

// The backtest as a table for a terminal.
std::string FormatBacktest(const nlohmann::json& backtest);

// Shared with `titan predict risk`: training origins every horizon (aligned to `anchor`) from
// the history's start until origin + horizon <= cutoff.
std::vector<double> TrainingOrigins(const fleet::FleetHistory& history, double anchor,
                                    double horizon, double cutoff);

// Rows [begin, end) of `all` as their own Landmarks.
Landmarks SliceLandmarks(const Landmarks& all, int p, size_t begin, size_t end);

}  // namespace titan::predict
