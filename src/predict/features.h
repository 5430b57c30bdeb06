// Landmark features: at a prediction time t ("landmark"), one row per component in service at
// t, with features computed only from records at or before t, and (for training and backtests)
// the outcome in (t, t + horizon]: the follow-up time until the first of a failure, the end of
// the component's stay (censored), t + horizon or the end of observation, and whether it was a
// failure.
//
// Features (names as reported in reasons and model files):
//   age_days, stay_days                time since first entered service / since this stay began
//   comp_failures, comp_failures_30d, comp_failures_365d: the component's own failures
//   comp_repairs, comp_moves           repairs and stays so far
//   <unit>_failures_30d, _365d         failures of any component at the same value of each unit
//                                      key (node_name, slot_name: "repeat offender" places)
//   fleet_failure_rate_30d             fleet failures per 1000 components in service, last 30 d
//   <key>=<level>                      each attribute with 2..16 levels in the history (one-hot,
//                                      the most common level is the reference)
//   cov_<name>, cov_<name>_delta_30d   each observed covariate: last value and its change over
//                                      30 days (0 when never observed)
// Counts, days and the fleet rate enter as log(1 + n). Unit keys with more than 16 levels never
// become one-hot columns.
//
// Thread safety: a FeatureSpace is immutable after Make; functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/fleet/history.h"

namespace titan::predict {

inline constexpr double kDaySeconds = 86400;

struct FeatureOptions {
  double horizon_seconds = 30 * kDaySeconds;
  std::vector<std::string> unit_keys = {"node_name", "slot_name"};
  int max_levels = 16;
};

// The columns for one history.
struct FeatureSpace {
  FeatureOptions options;
  std::vector<std::string> names;
  struct OneHot {
    std::string key;
    std::vector<std::string> levels;  // non-reference levels, each a column
    int first_column = 0;
  };
  std::vector<OneHot> one_hots;
  int first_covariate_column = 0;  // 2 columns per history covariate from here
  int p() const { return static_cast<int>(names.size()); }
  int Column(const std::string& name) const;  // -1 when absent
  static FeatureSpace Make(const fleet::FleetHistory& history, const FeatureOptions& options);
};

struct LandmarkRow {
  uint32_t component = 0;
  double origin_seconds = 0;
  double follow_seconds = 0;  // in (0, horizon]
  bool event = false;
  double weight = 1;            // inverse sampling probability
  int32_t units[2] = {-1, -1};  // index into Landmarks::unit_values[k]; -1 absent
};

struct Landmarks {
  std::vector<LandmarkRow> rows;
  std::vector<float> x;  // rows.size() x space.p(), row-major (float: a 100k-component
                         // backtest holds millions of rows)
  std::vector<std::vector<std::string>> unit_values;  // per unit key: value names
};

struct LandmarkOptions {
  std::vector<double> origins_seconds;  // ascending
  // Keep every row with a failure and this fraction of the others (weight 1/fraction), chosen
  // by a hash of (component, origin) so that the sample is reproducible. 1: all.
  double non_event_fraction = 1;
};

// Rows at each origin for the components in service there. Outcomes use records after the
// origin; features only records at or before it.
Landmarks BuildLandmarks(const fleet::FleetHistory& history, const FeatureSpace& space,
                         const LandmarkOptions& options);

}  // namespace titan::predict
