#include "src/predict/survfit.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace titan::predict {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Events per time (ascending) and cause: counts[k][cause].
std::vector<std::vector<double>> EventCounts(const std::vector<Interval>& data,
                                             const std::vector<double>& times, int causes) {
  std::vector<std::vector<double>> counts(times.size(), std::vector<double>(causes, 0.0));
  for (const Interval& i : data) {
    if (i.event < 0 || i.event >= causes) continue;
    size_t k = std::lower_bound(times.begin(), times.end(), i.stop) - times.begin();
    counts[k][i.event] += 1;
  }
  return counts;
}

}  // namespace

double NormalQuantile(double conf_level) {
  // Inverse of the standard normal CDF at (1 + level) / 2 by bisection on erfc (exact enough:
  // 1e-12 and called once per fit).
  const double target = (1 - conf_level) / 2;  // upper tail
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > target ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double SurvivalCurve::At(double t) const {
  auto it = std::upper_bound(time.begin(), time.end(), t);
  if (it == time.begin()) return 1.0;
  return surv[it - time.begin() - 1];
}

double SurvivalCurve::Median() const {
  for (size_t k = 0; k < time.size(); ++k) {
    if (surv[k] <= 0.5) return time[k];
  }
  return kNaN;
}

SurvivalCurve KaplanMeier(const std::vector<Interval>& data, double conf_level) {
  SurvivalCurve c;
  c.time = EventTimes(data);
  c.n_risk = AtRisk(data, c.time);
  const double z = NormalQuantile(conf_level);
  double s = 1, greenwood = 0;
  c.n_event.assign(c.time.size(), 0.0);
  // Every cause is an event.
  std::vector<double> events(c.time.size(), 0.0);
  for (const Interval& i : data) {
    if (i.event < 0) continue;
    events[std::lower_bound(c.time.begin(), c.time.end(), i.stop) - c.time.begin()] += 1;
  }
  for (size_t k = 0; k < c.time.size(); ++k) {
    const double n = c.n_risk[k], d = events[k];
    c.n_event[k] = d;
    s *= 1 - d / n;
    greenwood += n > d ? d / (n * (n - d)) : std::numeric_limits<double>::infinity();
    const double se = std::sqrt(greenwood);
    c.surv.push_back(s);
    c.std_err.push_back(std::isfinite(se) ? se : kNaN);
    if (s > 0 && std::isfinite(se)) {
      c.lower.push_back(s * std::exp(-z * se));
      c.upper.push_back(std::min(1.0, s * std::exp(z * se)));
    } else {
      c.lower.push_back(kNaN);
      c.upper.push_back(kNaN);
    }
  }
  return c;
}

CumulativeIncidence AalenJohansen(const std::vector<Interval>& data, int causes) {
  CumulativeIncidence r;
  r.time = EventTimes(data);
  r.n_risk = AtRisk(data, r.time);
  std::vector<std::vector<double>> counts = EventCounts(data, r.time, causes);
  r.n_event.assign(causes, std::vector<double>(r.time.size(), 0.0));
  r.incidence.assign(causes, std::vector<double>(r.time.size(), 0.0));
  double s = 1;
  std::vector<double> cif(causes, 0.0);
  for (size_t k = 0; k < r.time.size(); ++k) {
    const double n = r.n_risk[k];
    double d = 0;
    for (int j = 0; j < causes; ++j) {
      r.n_event[j][k] = counts[k][j];
      d += counts[k][j];
      cif[j] += s * counts[k][j] / n;
      r.incidence[j][k] = cif[j];
    }
    s *= 1 - d / n;
    r.event_free.push_back(s);
  }
  return r;
}

}  // namespace titan::predict
