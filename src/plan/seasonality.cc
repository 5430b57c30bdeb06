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

// The sum of x[i] y[i] over i < n, in four running sums (so that they need not wait on one
// another).
double Dot(const double* x, const double* y, size_t n) {
  double s[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) s[j] += x[i + j] * y[i + j];
  }
  for (; i < n; ++i) s[0] += x[i] * y[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// The sum of w[i] x[i] y[i] over i < n, likewise.
double Dot3(const double* w, const double* x, const double* y, size_t n) {
  double s[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) s[j] += w[i + j] * x[i + j] * y[i + j];
  }
  for (; i < n; ++i) s[0] += w[i] * x[i] * y[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// out[j] = the sum of w[k] x[k] over k < n with k mod period = j, for j < period (x null: 1).
void FoldByPhase(const double* w, const double* x, size_t n, size_t period, double* out) {
  std::fill(out, out + period, 0.0);
  for (size_t from = 0; from < n; from += period) {
    const size_t count = std::min(period, n - from);
    if (x == nullptr) {
      for (size_t j = 0; j < count; ++j) out[j] += w[from + j];
    } else {
      for (size_t j = 0; j < count; ++j) out[j] += w[from + j] * x[from + j];
    }
  }
}

}  // namespace

double MedianInPlace(std::vector<double>* v) {
  if (v->empty()) return kNaN;
  const size_t mid = v->size() / 2;
  std::nth_element(v->begin(), v->begin() + mid, v->end());
  double m = (*v)[mid];
  if (v->size() % 2 == 0) m = (m + *std::max_element(v->begin(), v->begin() + mid)) / 2;
  return m;
}

double WindowMedian(const std::vector<double>& values, size_t lo, size_t hi) {
  std::vector<double> window;
  window.reserve(hi > lo ? hi - lo : 0);
  for (size_t j = lo; j < hi && j < values.size(); ++j) {
    if (!std::isnan(values[j])) window.push_back(values[j]);
  }
  return MedianInPlace(&window);
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
  columns_.resize(values_.size());
  for (size_t i = 0; i < kept; ++i) {
    for (size_t c = 0; c < static_cast<size_t>(width_); ++c) {
      columns_[c * kept + i] = values_[i * width_ + c];
    }
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
  // Each row's weight is its decay times its bisquare weight (NaN rows weigh 0 and count as 0).
  std::vector<double> value(n), decay(n), weight_of(n);
  size_t observed = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool known = !std::isnan(residual[i]);
    value[i] = known ? residual[i] : 0;
    decay[i] = known ? decay_by_age[n - 1 - i] : 0;
    observed += known;
  }
  weight_of = decay;
  // Rows i and i + period are the same terms: the normal equations sum the weights (and the
  // weighted residuals) per phase first, then take sums over phases of products of columns.
  const size_t period = table.period_rows();
  const size_t phases = std::min(n, period);
  std::vector<double> beta(p, 0.0), errors, weight(phases), weighted(phases), phase_fit(phases);
  // The first cycle's share (see FourierTable::first_cycle_rows): all of a fit of its columns.
  const int first_columns = std::min(p, table.first_cycle_columns());
  const size_t first_rows = std::min(table.first_cycle_rows(), phases);
  std::vector<double> first_weight(first_rows), cross(first_rows * static_cast<size_t>(p));
  // Four bisquare iterations: the first is least squares; later ones weigh down outliers.
  constexpr int kIterations = 4;
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    std::vector<double> a(static_cast<size_t>(p) * p, 0.0), b(p, 0.0);
    std::fill(weight.begin(), weight.end(), 0.0);
    std::fill(weighted.begin(), weighted.end(), 0.0);
    for (size_t from = 0; from < n; from += period) {
      const size_t count = std::min(period, n - from);
      const double* w = &weight_of[from];
      const double* v = &value[from];
      for (size_t k = 0; k < count; ++k) {
        weight[k] += w[k];
        weighted[k] += w[k] * v[k];
      }
    }
    for (int r = 0; r < p; ++r) b[r] = Dot(weighted.data(), table.Column(r), phases);
    if (first_rows == 0) {
      for (int r = 0; r < p; ++r) {
        for (int c = 0; c <= r; ++c) {
          a[r * p + c] = Dot3(weight.data(), table.Column(r), table.Column(c), phases);
        }
      }
    } else {
      // The first cycle's columns f repeat every first_rows phases: their block is a sum over
      // its phases j of (the weights of the phases k = j mod first_rows) f_j f_j', and their
      // cross terms with the other columns g a sum of f_j (those phases' weighted g)'.
      FoldByPhase(weight.data(), nullptr, phases, first_rows, first_weight.data());
      for (int r = first_columns; r < p; ++r) {
        FoldByPhase(weight.data(), table.Column(r), phases, first_rows, &cross[r * first_rows]);
        for (int c = first_columns; c <= r; ++c) {
          a[r * p + c] = Dot3(weight.data(), table.Column(r), table.Column(c), phases);
        }
        for (int c = 0; c < first_columns; ++c) {
          a[r * p + c] = Dot(&cross[r * first_rows], table.Column(c), first_rows);
        }
      }
      for (int r = 0; r < first_columns; ++r) {
        for (int c = 0; c <= r; ++c) {
          a[r * p + c] = Dot3(first_weight.data(), table.Column(r), table.Column(c), first_rows);
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
    std::fill(phase_fit.begin(), phase_fit.end(), 0.0);
    for (int r = 0; r < p; ++r) {
      const double* x = table.Column(r);
      for (size_t k = 0; k < phases; ++k) phase_fit[k] += beta[r] * x[k];
    }
    std::vector<double> fitted_error(n);
    errors.resize(observed);
    size_t e = 0;
    for (size_t from = 0; from < n; from += period) {
      const size_t count = std::min(period, n - from);
      for (size_t k = 0; k < count; ++k) {
        const size_t i = from + k;
        fitted_error[i] = value[i] - phase_fit[k];
        if (decay[i] > 0) errors[e++] = std::fabs(fitted_error[i]);
      }
    }
    // Bisquare at 6 median absolute deviations; a series that is mostly fitted exactly (a
    // step function around its running median) has a MAD of 0: then the mean absolute error.
    double mad = MedianInPlace(&errors);
    if (!(mad > 0)) {
      double sum = 0;
      for (double x : errors) sum += x;
      mad = errors.empty() ? 0 : sum / static_cast<double>(errors.size());
    }
    if (!(mad > 1e-12)) break;  // fitted exactly: nothing to weigh down
    const double scale = 6 * mad;
    for (size_t i = 0; i < n; ++i) {
      const double u = fitted_error[i] / scale;
      weight_of[i] = std::fabs(u) < 1 ? decay[i] * (1 - u * u) * (1 - u * u) : 0;
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

std::vector<double> SeasonalProfile::Over(const FourierTable& table, size_t rows) const {
  std::vector<double> out(rows, 0.0);
  const size_t period = std::min(rows, table.period_rows());
  for (size_t i = 0; i < period; ++i) out[i] = At(table, i);
  for (size_t i = period; i < rows; ++i) out[i] = out[i - period];
  return out;
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
