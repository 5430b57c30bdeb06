// `titan predict risk`: each component's probability of failing within the horizon after
// `at`, from a model fitted on the history up to `at` (training rows whose horizon ended by
// then; nothing after `at` is read), ranked, with reasons: the features that raise it most
// (their share of the log relative risk, for the Cox models) and the recent failures and
// repairs of the component and of its node.
//
// JSON: {"at", "horizon_days", "model", "components_in_service", "expected_failures",
//        "fleet_mtbf_hours", "components": [{"rank", "component", "p", "node_name", "slot_name",
//        "reasons": [{"feature", "value", "contribution"}], "recent": ["2016-10-02 DBE ..."]}],
//        "nodes": [{"node_name", "p", "components"}]}
// (`components` holds the top `top` rows; `nodes` every node, by P(any failure) descending:
// the table `titan run --risk` reads).
//
// Thread safety: pure function.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/fleet/history.h"
#include "src/predict/features.h"

namespace titan::predict {

struct RiskOptions {
  double at_seconds = 0;
  double horizon_seconds = 30 * kDaySeconds;
  std::string model;  // empty: the default
  size_t top = 20;
  double train_fraction = 0.05;
};

Result<nlohmann::json> PredictRisk(const fleet::FleetHistory& history, const RiskOptions& options);

std::string FormatRisk(const nlohmann::json& risk);

}  // namespace titan::predict
