// A fleet's failures as titan sim needs them, fitted to its history (src/fleet): the failure rate
// per component-day of each class over a recent window, the time a failed component's place
// stays empty (its repair), and how much more the count of failures varies than a Poisson
// process would (a negative binomial's size k, fitted on the history's own past projections).
//
// Exposure is the time components were in service (src/predict/stays.h), failures every `fail`
// record (as titan predict's MTBF counts them). Repair times are measured per failure: until
// the component's next `repair` record, else, when it left service, until a component next
// entered at its `node_name`; failures whose repair had not ended by the history's end are not
// measured (so a long repair at the very end is missed).
//
// Projection: the failures in the next h days are expected to be rate x components in service
// x h, and counted as negative binomial NB(mu, k), variance mu + mu^2 / k, which is Poisson
// when k is infinite. k is the maximum-likelihood fit to how far the same projection missed at
// earlier origins of the history (each seeing only what came before it), so waves of failures
// such as Titan's in 2016 widen the intervals as far as the history shows they should.
//
// Thread safety: pure functions over an immutable history.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/fleet/history.h"

namespace titan::plan {

// Failures and exposure of a history by day, for windows of any length.
class FailureCounts {
 public:
  explicit FailureCounts(const fleet::FleetHistory& history);

  double begin_seconds() const { return begin_; }  // midnight UTC of the first day
  double end_seconds() const { return end_; }      // the history's end
  // Component-days in service within [a, b).
  double ExposureDays(double a, double b) const;
  // Fail records within [a, b) (all classes).
  int64_t Failures(double a, double b) const;
  // Components in service on average over the day before t: ExposureDays(t - 1 day, t).
  double InService(double t) const;

 private:
  size_t Day(double t) const;
  double begin_ = 0, end_ = 0;
  std::vector<double> exposure_days_;  // per day
  std::vector<int64_t> failures_;      // per day
  // Prefix sums, one longer than the days.
  std::vector<double> exposure_prefix_;
  std::vector<int64_t> failure_prefix_;
};

struct ClassRate {
  std::string name;
  int64_t failures = 0;
  double per_component_day = 0;
  bool needs_repair = true;  // false for the classes given as restart-only
};

struct FailureFit {
  double window_begin_seconds = 0, window_end_seconds = 0;
  double component_days = 0;  // exposure in the window
  double in_service = 0;      // components in service at the window's end (its last day)
  std::vector<ClassRate> classes;
  double per_component_day = 0;  // all classes
  int64_t repairs_measured = 0;
  double repair_mean_hours = 0, repair_median_hours = 0;  // 0 when none measured
  double dispersion_k = 0;                                // NB size; infinity: Poisson
  int dispersion_origins = 0;                             // the past projections k was fitted on
};

struct FitOptions {
  double window_days = 90;                // the rate's window, ending at `at_seconds`
  double at_seconds = 0;                  // 0: the history's end
  std::vector<std::string> restart_only;  // classes that need no repair (software)
  double dispersion_horizon_days = 30;    // the projection k is fitted on
};

// Errors: a window with no exposure (INVALID_ARGUMENT, naming the window and the history's span).
Result<FailureFit> FitFailures(const fleet::FleetHistory& history, const FailureCounts& counts,
                               const FitOptions& options);

// Maximum-likelihood NB size for counts with their expected values; infinity when a Poisson
// fits as well (the counts vary no more than Poisson's), 0 pairs: infinity.
double FitDispersion(const std::vector<double>& expected, const std::vector<int64_t>& counts);

// The q-quantile of NB(mu, k) (k infinite: Poisson(mu)): the least c with P(X <= c) >= q.
int64_t NegativeBinomialQuantile(double mu, double k, double q);

// Rolling-origin check of the projection: origins every `every_days` from the first with a
// full window and at least 3 past projections to fit k on, to the last whose horizon ends by
// the history's end.
struct ProjectionCheck {
  double origin_seconds = 0;
  double expected = 0;
  int64_t actual = 0;
  int64_t low = 0, high = 0;                  // the NB 90% interval (5% and 95% quantiles)
  int64_t poisson_low = 0, poisson_high = 0;  // the same for a Poisson
  double k = 0;
};
struct ProjectionBacktest {
  double horizon_days = 0;
  std::vector<ProjectionCheck> checks;
  double coverage = 0, poisson_coverage = 0;  // share of actual counts inside
};
ProjectionBacktest BacktestProjection(const FailureCounts& counts, double window_days,
                                      double horizon_days, double every_days);

nlohmann::json FailureFitJson(const FailureFit& fit);
nlohmann::json ProjectionBacktestJson(const ProjectionBacktest& backtest);

}  // namespace titan::plan
