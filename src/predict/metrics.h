// Backtest metrics for predictions of P(failure within horizon h) made at several origins.
// Each scored row has its origin index, follow-up time in (0, h], whether it failed, and the
// prediction. Censoring (a component that left service before h without failing) is handled by
// inverse probability of censoring weights (IPCW) from the Kaplan-Meier curve of the censoring
// times, G, pooled over origins.
//   c_index             Harrell's concordance: among pairs where one row failed first, the share
//                       where it had the higher prediction (ties 1/2); pairs within one origin
//   c_index_uno         Uno's concordance: the same with weights 1/G(T_i-)^2, T_i < h
//   auc                 cumulative/dynamic AUC at h: failed by h (weight 1/G(T-)) vs. still in
//                       service and not failed at h (weight 1/G(h)), within each origin
//   brier               IPCW Brier score at h (Graf et al. 1999)
//   calibration_slope   slope of the IPCW-weighted logistic regression of failure-by-h on
//                       logit(p): 1 is calibrated, < 1 over-confident
//   precision_at[k]     among the top fraction k of rows by p at each origin, the share that
//                       failed by h (censored rows count as not failed)
//   recall_at[k]        the share of the failures that were in those top rows
//   lift_at[k]          precision_at[k] / the base rate (failures / rows)
//   calibration         per decile of P: mean P next to the IPCW share that failed
// Per origin, sums are pooled (all pairs and rows count the same).
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace titan::predict {

struct ScoredRow {
  int32_t origin = 0;
  double follow = 0;  // in (0, horizon]
  bool event = false;
  double p = 0;
  uint32_t order = 0;  // tie-break for the top-k cut (stable across models)
};

inline const std::vector<double> kTopFractions = {0.01, 0.05, 0.1};

struct Metrics {
  double c_index = 0, c_index_uno = 0, auc = 0, brier = 0, calibration_slope = 0;
  std::map<double, double> precision_at, recall_at, lift_at;
  int64_t rows = 0, events = 0;
  // Calibration by decile of the prediction: mean prediction and the IPCW-weighted share that
  // failed by the horizon (rows whose outcome is known: failed, or reached the horizon).
  struct Bin {
    double p_mean = 0, observed = 0;
    int64_t rows = 0;
  };
  std::vector<Bin> calibration;
  nlohmann::json ToJson() const;
};

Metrics Evaluate(const std::vector<ScoredRow>& rows, double horizon);

}  // namespace titan::predict
