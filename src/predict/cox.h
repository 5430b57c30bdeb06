// Cox proportional hazards on counting-process data, as R's
//   coxph(Surv(start, stop, event) ~ x, ties = "efron", cluster = id)
// fits it: Efron's approximation for tied event times, delayed entry (an interval is at risk at
// t when start < t <= stop), Newton-Raphson with step halving from beta = 0, convergence when the
// relative change of the log partial likelihood is below `tolerance` (R's eps, 1e-9), the
// naive variance (inverse information) and the robust sandwich variance clustered by
// Interval::cluster (R's default whenever cluster() is given: sum over clusters of the
// dfbeta residuals' outer products). Every cause (event >= 0) is an event: map other causes
// to -1 first for a cause-specific fit.
//
// The Breslow estimate of the baseline cumulative hazard (at x = 0) makes predictions
// possible: P(event in (t, t + h] | at risk at t) = 1 - exp(-(H0(t+h) - H0(t)) exp(x beta)).
//
// Thread safety: pure function. Cost O(n log n + n p^2) per iteration.
#pragma once

#include <cstdint>
#include <vector>

#include "src/base/status.h"
#include "src/predict/survival_data.h"

namespace titan::predict {

struct CoxOptions {
  int max_iterations = 30;
  double tolerance = 1e-9;
  // Optional weights per interval (empty: all 1); a weighted fit as coxph(weights = w).
  std::vector<double> weights;
  // L2 penalty 0.5 * ridge * |beta|^2 on the log partial likelihood (0: none, R's fit). Keeps a
  // level without failures finite in the risk models.
  double ridge = 0;
  // Compute the robust (clustered) variance; the risk models, which need no variance, skip it.
  bool robust = true;
};

struct CoxFit {
  int p = 0;
  std::vector<double> coef, se, robust_se;  // robust_se empty when every cluster is one interval
  std::vector<double> var, robust_var;      // p x p, row-major
  double loglik_null = 0, loglik = 0;
  int iterations = 0;
  bool converged = false;
  int64_t n = 0, events = 0, clusters = 0;
  // Breslow baseline cumulative hazard at x = 0: steps at base_time (ascending).
  std::vector<double> base_time, base_cumhaz;
  double BaselineCumHaz(double t) const;
  double LinearPredictor(const double* x) const;
};

// x: n rows of p covariates (row-major), n = data.size(). INVALID_ARGUMENT when there is no
// event, when a covariate is constant or collinear with others (the message names its column
// index: the caller maps it to a name), or when the fit does not converge.
Result<CoxFit> FitCox(const std::vector<Interval>& data, const std::vector<double>& x, int p,
                      const CoxOptions& options = {});

}  // namespace titan::predict
