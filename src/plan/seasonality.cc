#include "src/plan/seasonality.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>

#include "src/base/check.h"
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

RunningMedians::RunningMedians(const std::vector<double>& values)
    : values_(values), rank_(values.size(), -1) {
  std::vector<int32_t> order;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isnan(values[i])) order.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return values[a] < values[b]; });
  sorted_.reserve(order.size());
  for (size_t r = 0; r < order.size(); ++r) {
    rank_[order[r]] = static_cast<int32_t>(r);
    sorted_.push_back(values[order[r]]);
  }
}

std::vector<double> RunningMedians::Of(size_t end, size_t half, size_t from) const {
  end = std::min(end, values_.size());
  std::vector<double> out(end, kNaN);
  if (from >= end) return out;
  // A Fenwick tree of counts by rank; tree[r] (1-based) covers ranks (r - lowbit(r), r].
  const size_t ranks = sorted_.size();
  std::vector<int32_t> tree(ranks + 1, 0);
  size_t top = 1;
  while (top * 2 <= ranks) top *= 2;
  int32_t count = 0;
  auto change = [&](size_t i, int32_t delta) {
    if (rank_[i] < 0) return;
    for (size_t r = static_cast<size_t>(rank_[i]) + 1; r <= ranks; r += r & (~r + 1)) {
      tree[r] += delta;
    }
    count += delta;
  };
  // The k-th smallest (0-based) of the window.
  auto kth = [&](int32_t k) {
    size_t position = 0;
    for (size_t step = top; step > 0; step /= 2) {
      if (position + step <= ranks && tree[position + step] <= k) {
        position += step;
        k -= tree[position];
      }
    }
    return sorted_[position];
  };
  // The window of i is [lo, hi): it starts as that of `from` and slides one step at a time.
  size_t lo = from >= half ? from - half : 0, hi = std::min(end, from + half + 1);
  for (size_t j = lo; j < hi; ++j) change(j, 1);
  for (size_t i = from; i < end; ++i) {
    const size_t want_lo = i >= half ? i - half : 0, want_hi = std::min(end, i + half + 1);
    for (; hi < want_hi; ++hi) change(hi, 1);
    for (; lo < want_lo; ++lo) change(lo, -1);
    if (count == 0) continue;
    const double upper = kth(count / 2);
    out[i] = count % 2 == 1 ? upper : (kth(count / 2 - 1) + upper) / 2;
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

FourierTable::FourierTable(const std::vector<Cycle>& cycles, double start_seconds,
                           double step_seconds, size_t rows)
    : cycles_(cycles), rows_(rows), period_rows_(std::max<size_t>(rows, 1)) {
  for (const Cycle& c : cycles) width_ += 2 * c.harmonics;
  // The rows repeat with the longest cycle when every cycle is a whole number of steps (as
  // CyclesFor's are, and the day divides the week): keep one period of them.
  size_t period = 1;
  for (const Cycle& c : cycles) {
    const double steps = c.period_seconds / step_seconds;
    if (!(steps >= 1) || std::fabs(steps - std::round(steps)) > 1e-9) {
      period = 0;
      break;
    }
    period = std::lcm(period, static_cast<size_t>(std::llround(steps)));
  }
  if (period > 0) period_rows_ = std::min(period_rows_, period);
  if (period > 0 && !cycles.empty()) {
    const size_t first = static_cast<size_t>(std::llround(cycles[0].period_seconds / step_seconds));
    if (first < period_rows_ && period_rows_ % first == 0) {
      first_cycle_rows_ = first;
      first_cycle_columns_ = 2 * cycles[0].harmonics;
    }
  }
  const size_t kept = std::min(rows, period_rows_);
  values_.reserve(kept * static_cast<size_t>(width_));
  std::vector<double> row;
  for (size_t i = 0; i < kept; ++i) {
    Features(cycles, start_seconds + step_seconds * static_cast<double>(i), &row);
    values_.insert(values_.end(), row.begin(), row.end());
  }
}

int FourierTable::ColumnsOf(const std::vector<Cycle>& cycles) const {
  if (cycles.size() > cycles_.size()) return -1;
  int columns = 0;
  for (size_t i = 0; i < cycles.size(); ++i) {
    if (cycles[i].period_seconds != cycles_[i].period_seconds ||
        cycles[i].harmonics != cycles_[i].harmonics) {
      return -1;
    }
    columns += 2 * cycles[i].harmonics;
  }
  return columns;
}

SeasonalProfile SeasonalProfile::Fit(const std::vector<double>& residual, double start_seconds,
                                     double step_seconds, const std::vector<Cycle>& cycles,
                                     double half_life_steps) {
  const FourierTable table(cycles, start_seconds, step_seconds, residual.size());
  return Fit(residual, table, cycles, table.ColumnsOf(cycles), half_life_steps);
}

SeasonalProfile SeasonalProfile::Fit(const std::vector<double>& residual, const FourierTable& table,
                                     const std::vector<Cycle>& cycles, int columns,
                                     double half_life_steps) {
  SeasonalProfile profile;
  profile.cycles_ = cycles;
  const int p = columns;
  if (p <= 0) return profile;
  const size_t n = residual.size();
  TITAN_CHECK(table.rows() >= n) << "a Fourier table of " << table.rows() << " rows for " << n;
  // The weight of a row `age` steps before the last: a forecaster fits many origins of one series
  // with one half-life, so the powers are kept per thread rather than recomputed per fit.
  thread_local double cached_half_life = kNaN;
  thread_local std::vector<double> decay_by_age;
  if (!(cached_half_life == half_life_steps)) {
    cached_half_life = half_life_steps;
    decay_by_age.clear();
  }
  while (decay_by_age.size() < n) {
    decay_by_age.push_back(std::exp2(-static_cast<double>(decay_by_age.size()) / half_life_steps));
  }
  std::vector<double> robust(n, 1.0);
  auto decay = [&](size_t i) { return decay_by_age[n - 1 - i]; };
  // Rows i and i + period are the same terms: the normal equations sum the weights (and the
  // weighted residuals) per phase first, then take one outer product per phase, not per row.
  const size_t period = table.period_rows();
  const size_t phases = std::min(n, period);
  std::vector<double> beta(p, 0.0), errors, weight(phases), weighted(phases), phase_fit(phases);
  // The first cycle's share (see FourierTable::first_cycle_rows): all of a fit of its columns.
  const int first_columns = std::min(p, table.first_cycle_columns());
  const size_t first_rows = table.first_cycle_rows();
  const size_t rest = static_cast<size_t>(p - first_columns);
  std::vector<double> first_weight(first_rows), cross(first_rows * rest);
  // Four bisquare iterations: the first is least squares; later ones weigh down outliers.
  constexpr int kIterations = 4;
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    std::vector<double> a(static_cast<size_t>(p) * p, 0.0), b(p, 0.0);
    std::fill(weight.begin(), weight.end(), 0.0);
    std::fill(weighted.begin(), weighted.end(), 0.0);
    for (size_t i = 0, k = 0; i < n; ++i, k = k + 1 == period ? 0 : k + 1) {  // k = i % period
      if (std::isnan(residual[i])) continue;
      const double w = decay(i) * robust[i];
      if (w <= 0) continue;
      weight[k] += w;
      weighted[k] += w * residual[i];
    }
    if (first_rows == 0) {
      for (size_t k = 0; k < phases; ++k) {
        if (weight[k] == 0) continue;
        const double* x = table.Row(k);
        for (int r = 0; r < p; ++r) {
          b[r] += weighted[k] * x[r];
          const double wx = weight[k] * x[r];
          for (int c = 0; c <= r; ++c) a[r * p + c] += wx * x[c];
        }
      }
    } else {
      // The first cycle's columns f repeat every first_rows phases: their block is a sum over
      // its phases j of (the weights of the phases k = j mod first_rows) f_j f_j', and their
      // cross terms with the other columns g a sum of f_j (those phases' weighted g)'.
      std::fill(first_weight.begin(), first_weight.end(), 0.0);
      std::fill(cross.begin(), cross.end(), 0.0);
      for (size_t k = 0; k < phases; ++k) {
        if (weight[k] == 0) continue;
        const double* x = table.Row(k);
        for (int r = 0; r < p; ++r) b[r] += weighted[k] * x[r];
        const size_t j = k % first_rows;
        first_weight[j] += weight[k];
        for (int r = first_columns; r < p; ++r) {
          const double wx = weight[k] * x[r];
          cross[j * rest + (r - first_columns)] += wx;
          for (int c = first_columns; c <= r; ++c) a[r * p + c] += wx * x[c];
        }
      }
      for (size_t j = 0; j < std::min(first_rows, phases); ++j) {
        const double* x = table.Row(j);
        for (int r = 0; r < first_columns; ++r) {
          const double wx = first_weight[j] * x[r];
          for (int c = 0; c <= r; ++c) a[r * p + c] += wx * x[c];
        }
        for (int r = first_columns; r < p; ++r) {
          const double g = cross[j * rest + (r - first_columns)];
          for (int c = 0; c < first_columns; ++c) a[r * p + c] += g * x[c];
        }
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
    if (iteration == kIterations - 1) break;  // the last fit's weights would go unused
    // Bisquare weights from the residuals' median absolute deviation.
    errors.clear();
    std::vector<double> fitted_error(n, kNaN);
    for (size_t k = 0; k < phases; ++k) {
      const double* x = table.Row(k);
      phase_fit[k] = 0;
      for (int r = 0; r < p; ++r) phase_fit[k] += beta[r] * x[r];
    }
    for (size_t i = 0, k = 0; i < n; ++i, k = k + 1 == period ? 0 : k + 1) {
      if (std::isnan(residual[i])) continue;
      fitted_error[i] = residual[i] - phase_fit[k];
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

double SeasonalProfile::At(const FourierTable& table, size_t i) const {
  const double* x = table.Row(i);
  double s = 0;
  for (size_t r = 0; r < coefficients_.size(); ++r) s += coefficients_[r] * x[r];
  return s;
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
