#include "src/plan/seasonality.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "src/plan/series.h"
#include "src/predict/linalg.h"

namespace titan::plan {

namespace {

// Fourier features of all cycles at one time, into *row.
void Features(const std::vector<Cycle>& cycles, double time_seconds, std::vector<double>* row) {
  row->clear();
  for (const Cycle& c : cycles) {
    // The phase from the time modulo the period keeps the argument small (epoch seconds times
    // 2 pi k would lose digits).
    const double phase = std::fmod(time_seconds, c.period_seconds) / c.period_seconds;
    for (int k = 1; k <= c.harmonics; ++k) {
      const double angle = 2 * std::numbers::pi * k * phase;
      row->push_back(std::sin(angle));
      row->push_back(std::cos(angle));
    }
  }
}

double MedianOf(std::vector<double>* v) {
  if (v->empty()) return kNaN;
  const size_t mid = v->size() / 2;
  std::nth_element(v->begin(), v->begin() + mid, v->end());
  double m = (*v)[mid];
  if (v->size() % 2 == 0) m = (m + *std::max_element(v->begin(), v->begin() + mid)) / 2;
  return m;
}

}  // namespace

double WindowMedian(const std::vector<double>& values, size_t lo, size_t hi) {
  std::vector<double> window;
  window.reserve(hi > lo ? hi - lo : 0);
  for (size_t j = lo; j < hi && j < values.size(); ++j) {
    if (!std::isnan(values[j])) window.push_back(values[j]);
  }
  return MedianOf(&window);
}

std::vector<double> RunningMedian(const std::vector<double>& values, size_t end, size_t half) {
  end = std::min(end, values.size());
  std::vector<double> out(end, kNaN), window;
  window.reserve(2 * half + 1);
  for (size_t i = 0; i < end; ++i) {
    window.clear();
    const size_t lo = i >= half ? i - half : 0, hi = std::min(end, i + half + 1);
    for (size_t j = lo; j < hi; ++j) {
      if (!std::isnan(values[j])) window.push_back(values[j]);
    }
    out[i] = MedianOf(&window);
  }
  return out;
}

std::vector<Cycle> CyclesFor(double step_seconds, size_t history_steps) {
  std::vector<Cycle> cycles;
  // Harmonics: enough for a working day's shape (6 for a day: periods down to 4 h), and a
  // smooth week (3: the weekend dip and a trend across the week); never more than the
  // steps of a cycle can carry.
  for (const auto& [period, harmonics] : {std::pair{kDaySeconds, 6}, {7 * kDaySeconds, 3}}) {
    const double steps = period / step_seconds;
    if (std::fabs(steps - std::round(steps)) > 1e-9 || steps < 4) continue;
    if (static_cast<double>(history_steps) < 2 * steps) continue;
    cycles.push_back({period, std::min(harmonics, static_cast<int>(steps) / 2 - 1)});
  }
  return cycles;
}

SeasonalProfile SeasonalProfile::Fit(const std::vector<double>& residual, double start_seconds,
                                     double step_seconds, const std::vector<Cycle>& cycles,
                                     double half_life_steps) {
  SeasonalProfile profile;
  profile.cycles_ = cycles;
  int p = 0;
  for (const Cycle& c : cycles) p += 2 * c.harmonics;
  if (p == 0) return profile;
  const size_t n = residual.size();
  std::vector<double> decay(n), robust(n, 1.0), row;
  for (size_t i = 0; i < n; ++i) {
    decay[i] = std::exp2(-static_cast<double>(n - 1 - i) / half_life_steps);
  }
  std::vector<std::vector<double>> rows(n);
  for (size_t i = 0; i < n; ++i) {
    Features(cycles, start_seconds + step_seconds * static_cast<double>(i), &rows[i]);
  }
  std::vector<double> beta(p, 0.0), errors;
  // Four bisquare iterations: the first is least squares; later ones weigh down outliers.
  for (int iteration = 0; iteration < 4; ++iteration) {
    std::vector<double> a(static_cast<size_t>(p) * p, 0.0), b(p, 0.0);
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(residual[i])) continue;
      const double w = decay[i] * robust[i];
      if (w <= 0) continue;
      const std::vector<double>& x = rows[i];
      for (int r = 0; r < p; ++r) {
        b[r] += w * x[r] * residual[i];
        for (int c = 0; c <= r; ++c) a[r * p + c] += w * x[r] * x[c];
      }
    }
    double trace = 0;
    for (int r = 0; r < p; ++r) trace += a[r * p + r];
    if (!(trace > 0)) return SeasonalProfile();
    for (int r = 0; r < p; ++r) {
      a[r * p + r] += 1e-6 * trace / p;  // a whisker of ridge: gaps may leave terms collinear
      for (int c = 0; c < r; ++c) a[c * p + r] = a[r * p + c];
    }
    if (!predict::InvertSpd(&a, p)) return SeasonalProfile();
    beta = predict::MatVec(a, b, p);
    // Bisquare weights from the residuals' median absolute deviation.
    errors.clear();
    std::vector<double> fitted_error(n, kNaN);
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(residual[i])) continue;
      double fit = 0;
      for (int r = 0; r < p; ++r) fit += beta[r] * rows[i][r];
      fitted_error[i] = residual[i] - fit;
      errors.push_back(std::fabs(fitted_error[i]));
    }
    // Bisquare at 6 median absolute deviations; a series that is mostly fitted exactly (a
    // step function around its running median) has a MAD of 0: then the mean absolute error.
    double mad = MedianOf(&errors);
    if (!(mad > 0)) {
      double sum = 0;
      for (double e : errors) sum += e;
      mad = errors.empty() ? 0 : sum / static_cast<double>(errors.size());
    }
    if (!(mad > 1e-12)) break;  // fitted exactly: nothing to weigh down
    const double scale = 6 * mad;
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(fitted_error[i])) continue;
      const double u = fitted_error[i] / scale;
      robust[i] = std::fabs(u) < 1 ? (1 - u * u) * (1 - u * u) : 0;
    }
  }
  profile.coefficients_ = std::move(beta);
  return profile;
}

double SeasonalProfile::At(double time_seconds) const {
  if (coefficients_.empty()) return 0;
  std::vector<double> row;
  Features(cycles_, time_seconds, &row);
  double s = 0;
  for (size_t r = 0; r < row.size(); ++r) s += coefficients_[r] * row[r];
  return s;
}

}  // namespace titan::plan
