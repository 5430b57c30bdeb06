// Non-parametric estimators on counting-process data, as R's survival::survfit computes them:
//  - KaplanMeier: the product-limit survival curve, every cause an event, with Greenwood's
//    variance and pointwise intervals on the log scale (survfit's default conf.type = "log"):
//    std_err = sqrt(sum d / (n (n - d))) is the standard error of the cumulative hazard, and
//    the interval is surv * exp(-/+ z std_err), the upper end capped at 1.
//  - AalenJohansen: cumulative incidence of each cause with the others competing
//    (survfit(Surv(start, stop, factor(cause)) ~ 1, id = cluster)'s pstate).
// Points are at the event times only (what summary(fit) prints). Delayed entry: an interval is
// at risk at t when start < t <= stop.
//
// Thread safety: pure functions. Cost O(n log n).
#pragma once

#include <vector>

#include "src/predict/survival_data.h"

namespace titan::predict {

struct SurvivalCurve {
  std::vector<double> time, n_risk, n_event, surv, std_err, lower, upper;  // NaN: undefined
  // S(t) for any t (the step function; 1 before the first event time).
  double At(double t) const;
  // The smallest time with surv <= 0.5; NaN when the curve stays above it.
  double Median() const;
};

// conf_level in (0, 1), e.g. 0.95.
SurvivalCurve KaplanMeier(const std::vector<Interval>& data, double conf_level = 0.95);

struct CumulativeIncidence {
  std::vector<double> time, n_risk;
  std::vector<std::vector<double>> n_event;    // [cause][k]
  std::vector<std::vector<double>> incidence;  // [cause][k]: P(failed of this cause by t)
  std::vector<double> event_free;              // P(no failure of any cause by t)
};

CumulativeIncidence AalenJohansen(const std::vector<Interval>& data, int causes);

// The two-sided normal quantile for a confidence level (0.95 -> 1.959964).
double NormalQuantile(double conf_level);

}  // namespace titan::predict
