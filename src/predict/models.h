// Risk models: each turns landmark rows (src/predict/features.h) into P(failure within the
// horizon). Fit on rows whose outcome was known at the fit's time; Predict on any rows built
// with the same FeatureSpace.
//   cox_history       Cox on every landmark feature (standardised, ridge 1), Breslow baseline:
//                     P = 1 - exp(-H0(h) exp(x beta))
//   xgboost_cox       gradient-boosted trees (XGBoost survival:cox, libxgboost) on the same
//                     features; its relative risks get a Breslow baseline the same way
//   cox_batch_age     baseline: Cox on age and the batch attribute (when there is one)
//   kaplan_meier      baseline: the fleet's P(failure within h) from a landmark Kaplan-Meier
//                     curve, the same for everyone (concordance 0.5 by construction)
//   repeat_offenders  baseline: components that failed, or sit where something failed
//                     (the first unit key, node_name), in the last 30 days; P is the training
//                     failure rate of flagged or unflagged rows
// A fitted model saves to and loads from JSON (its model file for titan agent and titan run).
//
// Thread safety: Fit is not; Predict and Contributions of a fitted model may run concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/predict/features.h"

namespace titan::predict {

class RiskModel {
 public:
  virtual ~RiskModel() = default;
  virtual const char* name() const = 0;
  virtual Status Fit(const Landmarks& train, const FeatureSpace& space) = 0;
  // P(failure within the horizon) for each row of `rows`.
  virtual std::vector<double> Predict(const Landmarks& rows) const = 0;
  // Each feature's share of row i's log relative risk against the training mean (empty when
  // the model cannot say).
  virtual std::vector<double> Contributions(const Landmarks& rows, size_t i) const { return {}; }
  virtual nlohmann::json Save() const = 0;
  virtual Status Load(const nlohmann::json& model, const FeatureSpace& space) = 0;
};

// The models, default first.
const std::vector<std::string>& ModelNames();
inline constexpr const char* kDefaultModel = "cox_history";
// nullptr for an unknown name.
std::unique_ptr<RiskModel> MakeModel(const std::string& name);

}  // namespace titan::predict
