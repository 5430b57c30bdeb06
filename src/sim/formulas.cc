#include "src/sim/formulas.h"

#include <cmath>

namespace titan::sim {

double YoungIntervalSeconds(double delta_seconds, double mtbf_seconds) {
  return std::sqrt(2.0 * delta_seconds * mtbf_seconds);
}

double DalyIntervalSeconds(double delta_seconds, double mtbf_seconds) {
  if (delta_seconds >= 2.0 * mtbf_seconds) return mtbf_seconds;
  const double ratio = delta_seconds / (2.0 * mtbf_seconds);
  return std::sqrt(2.0 * delta_seconds * mtbf_seconds) *
             (1.0 + std::sqrt(ratio) / 3.0 + ratio / 9.0) -
         delta_seconds;
}

double ExpectedSegmentSeconds(double length_seconds, double restart_seconds, double mtbf_seconds) {
  return mtbf_seconds * std::exp(restart_seconds / mtbf_seconds) *
         std::expm1(length_seconds / mtbf_seconds);
}

double ExpectedWallSeconds(double work_seconds, double interval_seconds, double delta_seconds,
                           double restart_seconds, double mtbf_seconds) {
  double full = std::floor(work_seconds / interval_seconds);
  double remainder = work_seconds - full * interval_seconds;
  if (remainder <= 1e-9 * interval_seconds) {  // the last full segment needs no checkpoint
    full -= 1;
    remainder = interval_seconds;
  }
  return full * ExpectedSegmentSeconds(interval_seconds + delta_seconds, restart_seconds,
                                       mtbf_seconds) +
         ExpectedSegmentSeconds(remainder, restart_seconds, mtbf_seconds);
}

double ExpectedEttr(double interval_seconds, double delta_seconds, double restart_seconds,
                    double mtbf_seconds) {
  return interval_seconds /
         ExpectedSegmentSeconds(interval_seconds + delta_seconds, restart_seconds, mtbf_seconds);
}

double OptimalIntervalSeconds(double delta_seconds, double restart_seconds, double mtbf_seconds) {
  // ExpectedEttr is unimodal in the interval; search log(interval) over a wide bracket.
  double lo = std::log(1e-3 * YoungIntervalSeconds(delta_seconds, mtbf_seconds) + 1e-9);
  double hi = std::log(10.0 * mtbf_seconds + 10.0 * delta_seconds);
  const double golden = 0.5 * (std::sqrt(5.0) - 1.0);
  auto f = [&](double x) {
    return -ExpectedEttr(std::exp(x), delta_seconds, restart_seconds, mtbf_seconds);
  };
  double a = hi - golden * (hi - lo), b = lo + golden * (hi - lo);
  double fa = f(a), fb = f(b);
  for (int i = 0; i < 200 && hi - lo > 1e-10; ++i) {
    if (fa < fb) {
      hi = b, b = a, fb = fa;
      a = hi - golden * (hi - lo), fa = f(a);
    } else {
      lo = a, a = b, fa = fb;
      b = lo + golden * (hi - lo), fb = f(b);
    }
  }
  return std::exp(0.5 * (lo + hi));
}

}  // namespace titan::sim
