#include "src/plan/titan_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include <fmt/format.h>

#include "src/base/check.h"
#include "src/base/duration.h"
#include "src/plan/seasonality.h"

namespace titan::plan {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The seasonal profile's weights halve every two weeks into the past.
constexpr double kSeasonHalfLifeSeconds = 14 * kDaySeconds;
// ChooseRecency's candidate half-lives, in inner origins (infinite: no weighting).
constexpr double kRecencyHalfLives[] = {kInf, 16, 8, 4, 2};
constexpr size_t kRecencyCandidates = std::size(kRecencyHalfLives);

struct Params {
  size_t decomposition = 0;  // index of the level the profile is fitted around
  double gamma = 1;          // share of the seasonal profile used
  size_t window = 0;         // steps of the level's median (the whole history when >= origin)
  double half_life = kInf;   // steps; 0: the level at once; infinite: the last value persists
};

// What the forecast at one origin needs: the seasonal profile over the history and horizon.
struct OriginFit {
  size_t origin = 0;             // values[0, origin) are known
  std::vector<double> seasonal;  // S at t < origin + horizon
  bool has_cycles = false;
};

double Decay(double steps_ahead, double half_life) {
  if (half_life == 0) return 0;
  if (std::isinf(half_life)) return 1;
  return std::exp2(-steps_ahead / half_life);
}

OriginFit FitAt(const RegularSeries& s, const FourierTable& table, const RunningMedians& medians,
                size_t origin, size_t horizon, const std::vector<double>& full_median,
                size_t half) {
  OriginFit fit;
  fit.origin = origin;
  const std::vector<double>& y = s.values;
  // The level: the running median, its last `half` values from what is known at the origin.
  const std::vector<double> known = medians.Of(origin, half, origin > half ? origin - half : 0);
  std::vector<double> residual(origin);
  for (size_t t = 0; t < origin; ++t) {
    const double level = t + half >= origin ? known[t] : full_median[t];
    residual[t] = y[t] - level;  // NaN when either is
  }
  const std::vector<Cycle> cycles = CyclesFor(s.step_seconds, origin);
  fit.has_cycles = !cycles.empty();
  const int columns = table.ColumnsOf(cycles);
  TITAN_CHECK(columns >= 0) << "an origin's cycles are the first of the whole history's";
  const SeasonalProfile profile = SeasonalProfile::Fit(
      residual, table, cycles, columns, std::max(2.0, kSeasonHalfLifeSeconds / s.step_seconds));
  fit.seasonal = profile.Over(table, origin + horizon);
  return fit;
}

// The level and the last value of a = y - gamma S before the origin, for each window.
struct State {
  double last = kNaN;
  std::vector<double> level;  // per window
};

State StateAt(const std::vector<double>& y, const OriginFit& fit, double gamma,
              const std::vector<size_t>& windows) {
  State st;
  const size_t o = fit.origin;
  std::vector<double> a(o);
  for (size_t t = 0; t < o; ++t) a[t] = y[t] - gamma * fit.seasonal[t];
  for (size_t t = o; t-- > 0;) {
    if (!std::isnan(a[t])) {
      st.last = a[t];
      break;
    }
  }
  for (size_t w : windows) st.level.push_back(WindowMedian(a, o > w ? o - w : 0, o));
  return st;
}

double PointAt(const OriginFit& fit, double gamma, double level, double last, double half_life,
               size_t h) {
  return gamma * fit.seasonal[fit.origin + h] + level + (last - level) * Decay(h + 1.0, half_life);
}

// Powers of two from `from` while below `limit`.
std::vector<size_t> Doublings(size_t from, size_t limit) {
  std::vector<size_t> out;
  for (size_t v = from; v < limit; v *= 2) out.push_back(v);
  return out;
}

std::string Steps(double steps, double step_seconds) {
  if (std::isinf(steps)) return "never";
  if (steps == 0) return "at once";
  return FormatDurationShort(static_cast<int64_t>(steps * step_seconds * 1e9));
}

// The q-quantile of `v`, sorted ascending (0 when empty): linear interpolation between order
// statistics (R's type 7).
double QuantileOfSorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// The seasonal median: the forecast for step h after origin o is the median of the values at
// the same phase of the last `count` whole periods before o (NaN skipped), so count 1 is
// seasonal naive and more periods weigh down one odd day. Where none is known, the median of
// the whole history before o.
struct SeasonalMedian {
  size_t period = 0;  // steps
  int count = 1;
};

std::vector<double> SeasonalMedianPath(const std::vector<double>& y, size_t origin, size_t span,
                                       const SeasonalMedian& m) {
  std::vector<double> path(span), values;
  double fallback = kNaN;  // taken when first needed (a median of the whole history)
  for (size_t h = 0; h < span; ++h) {
    values.clear();
    const size_t target = origin + h;
    for (size_t back = (h / m.period + 1) * m.period;
         back <= target && values.size() < static_cast<size_t>(m.count); back += m.period) {
      if (!std::isnan(y[target - back])) values.push_back(y[target - back]);
    }
    if (!values.empty()) {
      path[h] = MedianInPlace(&values);
      continue;
    }
    if (std::isnan(fallback)) fallback = WindowMedian(y, 0, origin);
    path[h] = fallback;
  }
  return path;
}

// The mean over steps ahead of sum[h] / count[h], the mean absolute error at step h (steps with
// no error left out); infinite when no step has one. Every model choice here is scored so.
double MeanOverSteps(const double* sum, const int32_t* count, size_t horizon) {
  double score = 0;
  int steps = 0;
  for (size_t h = 0; h < horizon; ++h) {
    if (count[h] == 0) continue;
    score += sum[h] / count[h];
    ++steps;
  }
  return steps == 0 ? kInf : score / steps;
}

// Scores of point paths at the inner origins: the mean over steps ahead of the mean absolute
// error at that step (steps no origin reaches are left out); infinite when nothing is scored.
double PathScore(const std::vector<double>& y, const std::vector<OriginFit>& fits,
                 const std::vector<std::vector<double>>& paths, size_t horizon) {
  std::vector<double> sum(horizon, 0.0);
  std::vector<int32_t> count(horizon, 0);
  for (size_t k = 0; k < fits.size(); ++k) {
    for (size_t h = 0; h < paths[k].size(); ++h) {
      const double actual = y[fits[k].origin + h];
      if (std::isnan(actual) || std::isnan(paths[k][h])) continue;
      sum[h] += std::fabs(actual - paths[k][h]);
      ++count[h];
    }
  }
  return MeanOverSteps(sum.data(), count.data(), horizon);
}

// The levels the seasonal profile is fitted around, and its fits at the inner origins.
struct Decomposition {
  size_t half = 0;                  // steps each side of the running median
  std::vector<double> full_median;  // RunningMedians(y).Of(n, half)
  std::vector<OriginFit> fits;      // at each inner origin
};

// The profile model's grid (see the header).
struct Grid {
  std::vector<double> gammas;
  std::vector<size_t> windows;  // the last, n: the whole history (clipped to each origin)
  std::vector<double> half_lives;
};

// Up to `count` inner origins spread over the last two thirds of n steps.
std::vector<size_t> InnerOrigins(size_t n, size_t count) {
  const size_t first = std::max(kMinHistorySteps, n / 3);
  std::vector<size_t> origins;
  if (first + 1 >= n) return origins;
  count = std::min(count, n - first);
  for (size_t k = 0; k < count; ++k) {
    const size_t o = first + (count == 1 ? 0 : k * (n - 1 - first) / (count - 1));
    if (origins.empty() || origins.back() != o) origins.push_back(o);
  }
  return origins;
}

// The cell of the grid with the least mean over steps of the mean absolute error at that step,
// over every decomposition's inner origins (a default cell when none is scored).
Params ChooseProfileModel(const std::vector<double>& y, const std::vector<Decomposition>& ds,
                          const Grid& grid, size_t horizon) {
  const std::vector<double>& gammas = grid.gammas;
  const std::vector<size_t>& windows = grid.windows;
  const std::vector<double>& half_lives = grid.half_lives;
  const size_t n = y.size();
  // Absolute errors per (decomposition, gamma, window, half-life) and step ahead.
  auto count_of = [&](size_t d, size_t g, size_t w) {
    return ((d * gammas.size() + g) * windows.size() + w) * horizon;
  };
  auto cell_of = [&](size_t d, size_t g, size_t w, size_t l) {
    return (count_of(d, g, w) / horizon * half_lives.size() + l) * horizon;
  };
  const size_t cells = ds.size() * gammas.size() * windows.size();
  std::vector<double> error_sum(cells * half_lives.size() * horizon, 0.0);
  // The errors counted per step are the same for every half-life: counted per window.
  std::vector<int32_t> error_count(cells * horizon, 0);
  // The reversion's weights per half-life and step ahead, and each origin's actual values with
  // a mask of the observed ones, so that the loop below is branch-free over the steps.
  std::vector<double> decay(half_lives.size() * horizon);
  for (size_t l = 0; l < half_lives.size(); ++l) {
    for (size_t h = 0; h < horizon; ++h) decay[l * horizon + h] = Decay(h + 1.0, half_lives[l]);
  }
  std::vector<double> actual(horizon), is_observed(horizon), base(horizon);
  std::vector<int32_t> observed_count(horizon);
  for (size_t d = 0; d < ds.size(); ++d) {
    for (const OriginFit& fit : ds[d].fits) {
      const size_t span = std::min(horizon, n - fit.origin);
      for (size_t h = 0; h < span; ++h) {
        const double v = y[fit.origin + h];
        observed_count[h] = std::isnan(v) ? 0 : 1;
        is_observed[h] = observed_count[h];
        actual[h] = std::isnan(v) ? 0 : v;
      }
      for (size_t g = 0; g < gammas.size(); ++g) {
        // Without the profile every decomposition forecasts alike.
        if (d > 0 && gammas[g] == 0) continue;
        const State st = StateAt(y, fit, gammas[g], windows);
        if (std::isnan(st.last)) continue;
        for (size_t h = 0; h < span; ++h) base[h] = gammas[g] * fit.seasonal[fit.origin + h];
        for (size_t w = 0; w < windows.size(); ++w) {
          const double level = st.level[w], deviation = st.last - st.level[w];
          if (std::isnan(level)) continue;
          for (size_t h = 0; h < span; ++h) error_count[count_of(d, g, w) + h] += observed_count[h];
          for (size_t l = 0; l < half_lives.size(); ++l) {
            const double* __restrict weight = &decay[l * horizon];
            double* __restrict sum = &error_sum[cell_of(d, g, w, l)];
            const double* __restrict at = actual.data();
            const double* __restrict seen = is_observed.data();
            const double* __restrict profile = base.data();
            for (size_t h = 0; h < span; ++h) {
              const double p = profile[h] + level + deviation * weight[h];  // PointAt
              sum[h] += seen[h] * std::fabs(at[h] - p);
            }
          }
        }
      }
    }
  }
  Params best{0, gammas.back(), windows[std::min<size_t>(2, windows.size() - 1)], 8};
  double best_score = kInf;
  for (size_t d = 0; d < ds.size(); ++d) {
    for (size_t g = 0; g < gammas.size(); ++g) {
      for (size_t w = 0; w < windows.size(); ++w) {
        for (size_t l = 0; l < half_lives.size(); ++l) {
          const double cell_score = MeanOverSteps(&error_sum[cell_of(d, g, w, l)],
                                                  &error_count[count_of(d, g, w)], horizon);
          if (cell_score < best_score) {
            best_score = cell_score;
            best = {d, gammas[g], windows[w], half_lives[l]};
          }
        }
      }
    }
  }
  return best;
}

// The profile model's point path over `span` steps after a fit's origin (NaN when its state is
// unknown).
std::vector<double> ProfilePath(const std::vector<double>& y, const OriginFit& fit, const Params& p,
                                size_t span) {
  std::vector<double> path(span, kNaN);
  const State st = StateAt(y, fit, p.gamma, {p.window});
  if (std::isnan(st.last) || std::isnan(st.level[0])) return path;
  for (size_t h = 0; h < span; ++h) {
    path[h] = PointAt(fit, p.gamma, st.level[0], st.last, p.half_life, h);
  }
  return path;
}

// The seasonal medians of the day and the week that the inner backtest scores: whole numbers
// of steps that every inner origin (the earliest at `earliest`) has a period of history for.
std::vector<SeasonalMedian> SeasonalMedians(double step_seconds, size_t earliest) {
  std::vector<SeasonalMedian> medians;
  for (const auto& [period_seconds, counts] :
       {std::pair{kDaySeconds, std::vector<int>{1, 3, 7}}, {7 * kDaySeconds, {1, 2}}}) {
    const double steps = period_seconds / step_seconds;
    if (std::fabs(steps - std::round(steps)) > 1e-9 || steps < 2) continue;
    const size_t period = static_cast<size_t>(std::llround(steps));
    if (earliest < period) continue;
    for (int count : counts) medians.push_back({period, count});
  }
  return medians;
}

// The seasonal median with the least PathScore at the inner origins of `fits`, with its paths
// there (period 0 and an infinite score when no seasonal median applies).
struct MedianChoice {
  SeasonalMedian median;
  double score = kInf;
  std::vector<std::vector<double>> paths;  // per fit
};
MedianChoice ChooseSeasonalMedian(const std::vector<double>& y, const std::vector<OriginFit>& fits,
                                  double step_seconds, size_t horizon) {
  MedianChoice best;
  for (const SeasonalMedian& m :
       SeasonalMedians(step_seconds, fits.empty() ? 0 : fits.front().origin)) {
    std::vector<std::vector<double>> paths;
    for (const OriginFit& fit : fits) {
      paths.push_back(
          SeasonalMedianPath(y, fit.origin, std::min(horizon, y.size() - fit.origin), m));
    }
    const double score = PathScore(y, fits, paths, horizon);
    if (score < best.score) best = {m, score, std::move(paths)};
  }
  return best;
}

std::string DescribeSeasonalMedian(const SeasonalMedian& m, double step_seconds) {
  const bool week = m.period * step_seconds >= 7 * kDaySeconds;
  return m.count == 1 ? fmt::format("the value a {} earlier", week ? "week" : "day")
                      : fmt::format("the median of the last {} {}s at that time", m.count,
                                    week ? "week" : "day");
}

// The mean of two paths (b where a is NaN).
std::vector<double> MeanOf(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a.size());
  for (size_t h = 0; h < a.size(); ++h) out[h] = std::isnan(a[h]) ? b[h] : (a[h] + b[h]) / 2;
  return out;
}

// The standardised band's half-widths: the errors' absolute deviations from their median,
// sorted.
std::vector<double> SortedSpread(std::vector<double> standardised) {
  std::sort(standardised.begin(), standardised.end());
  const double median_z = QuantileOfSorted(standardised, 0.5);
  std::vector<double> spread;
  for (double z : standardised) spread.push_back(std::fabs(z - median_z));
  std::sort(spread.begin(), spread.end());
  return spread;
}

// The band's standardised quantile at level q from the sorted spread: its quantile at the
// central share |2q - 1| up to `anchor`; beyond it an exponential (Laplace) tail through the
// anchor's quantile (anchor 1: the spread's own quantiles throughout).
double BandZ(const std::vector<double>& sorted_spread, double q, double anchor) {
  const double share = std::fabs(2 * q - 1);
  const double half_width = share <= anchor ? QuantileOfSorted(sorted_spread, share)
                                            : QuantileOfSorted(sorted_spread, anchor) *
                                                  std::log1p(-share) / std::log1p(-anchor);
  return (q < 0.5 ? -1 : 1) * half_width;
}

// The quantiles at `levels` about `center`: center plus or minus scale[h] times BandZ of the
// standardised inner errors' absolute deviations from their median, with the tail `anchor`
// (ChooseTailAnchor). The errors' median is taken out: a bias the inner backtest saw (the
// history rose, say) need not go on, and the point is the median of its own quantiles. The band
// is symmetric: each tail's quantile comes from the absolute errors of both (a few dozen inner
// origins say little about one tail alone).
std::vector<std::vector<double>> BandFromInnerErrors(const std::vector<double>& center,
                                                     const std::vector<double>& scale,
                                                     const std::vector<double>& standardised,
                                                     const std::vector<double>& levels,
                                                     double anchor) {
  const std::vector<double> spread = SortedSpread(standardised);
  std::vector<std::vector<double>> band;
  for (double q : levels) {
    const double z = BandZ(spread, q, anchor);
    std::vector<double> values(center.size());
    for (size_t h = 0; h < center.size(); ++h) values[h] = center[h] + scale[h] * z;
    band.push_back(std::move(values));
  }
  return band;
}

// Too short a history for an inner backtest: Gaussian intervals from the one-step changes of y,
// growing with the square root of the steps ahead.
std::vector<std::vector<double>> GaussianBand(const std::vector<double>& y,
                                              const std::vector<double>& center,
                                              const std::vector<double>& levels) {
  double sum = 0;
  int count = 0;
  for (size_t t = 1; t < y.size(); ++t) {
    if (std::isnan(y[t]) || std::isnan(y[t - 1])) continue;
    sum += (y[t] - y[t - 1]) * (y[t] - y[t - 1]);
    ++count;
  }
  const double sd = count > 0 ? std::sqrt(sum / count) : 0;
  std::vector<std::vector<double>> band;
  for (double q : levels) {
    std::vector<double> values(center.size());
    for (size_t h = 0; h < center.size(); ++h) {
      values[h] = center[h] + sd * std::sqrt(h + 1.0) * NormalQuantile(q);
    }
    band.push_back(std::move(values));
  }
  return band;
}

// The history a forecast uses: the last kMaxHistorySeconds of it, or four horizons if longer,
// less its trailing gaps.
RegularSeries RecentHistory(const RegularSeries& full_history, size_t horizon) {
  RegularSeries s = full_history;
  const size_t keep = static_cast<size_t>(std::max(
      TitanForecaster::kMaxHistorySeconds / s.step_seconds, 4.0 * static_cast<double>(horizon)));
  if (s.values.size() > keep) {
    const size_t drop = s.values.size() - keep;
    s.values.erase(s.values.begin(), s.values.begin() + static_cast<ptrdiff_t>(drop));
    s.start_seconds += static_cast<double>(drop) * s.step_seconds;
  }
  while (!s.values.empty() && std::isnan(s.values.back())) s.values.pop_back();
  return s;
}

// The chosen model's inner errors: the scale per step ahead, the mean absolute error made
// non-decreasing by isotonic regression (pool adjacent violators, weighted by the errors per
// step: a noisy high step does not ratchet up every later one; steps with fewer than 3 errors
// take the value of the block before them), and the errors divided by it.
struct InnerErrors {
  std::vector<double> scale;  // per step ahead
  std::vector<double> standardised;
  std::vector<size_t> origin_of;  // the inner origin (index into fits) of each
  std::vector<size_t> time_of;    // the step of y each error is at
};
InnerErrors StandardisedErrors(const std::vector<double>& y, const std::vector<OriginFit>& fits,
                               const std::vector<std::vector<double>>& paths, size_t horizon) {
  std::vector<std::vector<double>> errors(horizon);
  std::vector<std::vector<size_t>> origins(horizon);
  for (size_t k = 0; k < fits.size(); ++k) {
    for (size_t h = 0; h < paths[k].size(); ++h) {
      const double actual = y[fits[k].origin + h];
      if (std::isnan(actual) || std::isnan(paths[k][h])) continue;
      errors[h].push_back(actual - paths[k][h]);
      origins[h].push_back(k);
    }
  }
  InnerErrors out;
  out.scale = NonDecreasingMeanAbs(errors, 3);
  for (size_t h = 0; h < horizon; ++h) {
    if (out.scale[h] <= 0) continue;
    for (size_t i = 0; i < errors[h].size(); ++i) {
      out.standardised.push_back(errors[h][i] / out.scale[h]);
      out.origin_of.push_back(origins[h][i]);
      out.time_of.push_back(fits[origins[h][i]].origin + h);
    }
  }
  return out;
}

}  // namespace

std::vector<double> NonDecreasingMeanAbs(const std::vector<std::vector<double>>& errors,
                                         size_t min_count) {
  struct Block {
    double mean;
    double weight;
    size_t steps;
  };
  std::vector<Block> blocks;
  size_t leading = 0;  // steps before the first block
  for (const std::vector<double>& at_step : errors) {
    if (at_step.size() < min_count) {
      (blocks.empty() ? leading : blocks.back().steps) += 1;
      continue;
    }
    double sum = 0;
    for (double e : at_step) sum += std::fabs(e);
    const double weight = static_cast<double>(at_step.size());
    blocks.push_back({sum / weight, weight, 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].mean > blocks.back().mean) {
      const Block last = blocks.back();
      blocks.pop_back();
      Block& merged = blocks.back();
      merged.mean =
          (merged.mean * merged.weight + last.mean * last.weight) / (merged.weight + last.weight);
      merged.weight += last.weight;
      merged.steps += last.steps;
    }
  }
  std::vector<double> out(leading, blocks.empty() ? 0.0 : blocks.front().mean);
  for (const Block& b : blocks) out.insert(out.end(), b.steps, b.mean);
  return out;
}

double ChooseTailAnchor(const std::vector<double>& standardised,
                        const std::vector<size_t>& origin_of, const std::vector<double>& levels) {
  TITAN_CHECK(standardised.size() == origin_of.size()) << "one origin per error";
  constexpr double kAnchors[] = {1, 0.9, 0.8, 0.7, 0.5};
  std::vector<double> half[2];
  for (size_t i = 0; i < standardised.size(); ++i) {
    half[origin_of[i] % 2].push_back(standardised[i]);
  }
  if (half[0].size() < 10 || half[1].size() < 10) return 1;
  const std::vector<double> spread[2] = {SortedSpread(half[0]), SortedSpread(half[1])};
  double best_anchor = 1, best_loss = kInf;
  for (double anchor : kAnchors) {
    double loss = 0;
    for (int fold = 0; fold < 2; ++fold) {
      for (double q : levels) {
        const double zq = BandZ(spread[1 - fold], q, anchor);
        double sum = 0;
        for (double z : half[fold]) sum += std::max(q * (z - zq), (q - 1) * (z - zq));
        loss += sum / static_cast<double>(half[fold].size());
      }
    }
    if (loss < best_loss) {
      best_loss = loss;
      best_anchor = anchor;
    }
  }
  return best_anchor;
}

RecencyChoice ChooseRecency(const std::vector<double>& standardised,
                            const std::vector<size_t>& origin_of,
                            const std::vector<size_t>& time_of, const std::vector<double>& levels,
                            double anchor) {
  TITAN_CHECK(standardised.size() == origin_of.size() && standardised.size() == time_of.size())
      << "one origin and one time per error";
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  RecencyChoice choice;
  size_t origins = 0;
  for (size_t k : origin_of) origins = std::max(origins, k + 1);
  if (origins < 8) return choice;
  // Each origin's errors and first step (what was known when it was made: the errors before
  // it), the horizon, and the shortest half-life allowed: the origins one horizon spans.
  std::vector<std::vector<size_t>> errors_of(origins);
  std::vector<size_t> start(origins, kNone);
  for (size_t i = 0; i < time_of.size(); ++i) {
    errors_of[origin_of[i]].push_back(i);
    start[origin_of[i]] = std::min(start[origin_of[i]], time_of[i]);
  }
  size_t horizon = 0;
  for (size_t i = 0; i < time_of.size(); ++i) {
    horizon = std::max(horizon, time_of[i] - start[origin_of[i]] + 1);
  }
  // Origins without an error (a gap over their whole span) have no first step.
  size_t first = 0;
  while (start[first] == kNone) ++first;  // the last origin has one
  const double spacing = first + 1 < origins
                             ? static_cast<double>(start[origins - 1] - start[first]) /
                                   static_cast<double>(origins - 1 - first)
                             : 0;
  const double shortest = spacing > 0 ? static_cast<double>(horizon) / spacing : kInf;

  // The errors known so far (of origins before some end, at steps before some now), sorted by
  // value with their origins: the set only grows as the end moves on, so each origin's
  // additions are sorted and merged in. `Band` gives their sorted spread about their median
  // and per candidate half-life the band's factor: their mean absolute deviation with origin j
  // weighing 2^-((end - 1 - j) / half_life) over the plain mean. No spread (factors 1) from
  // fewer than 10 errors.
  std::vector<std::pair<double, size_t>> known;
  std::vector<char> is_known(standardised.size(), 0);
  auto learn = [&](size_t end, size_t now) {
    const size_t before = known.size();
    for (size_t j = 0; j < end; ++j) {
      for (size_t i : errors_of[j]) {
        if (is_known[i] || time_of[i] >= now) continue;
        is_known[i] = 1;
        known.emplace_back(standardised[i], j);
      }
    }
    std::sort(known.begin() + static_cast<ptrdiff_t>(before), known.end());
    std::inplace_merge(known.begin(), known.begin() + static_cast<ptrdiff_t>(before), known.end());
  };
  struct Band {
    std::vector<double> spread;
    double factor[kRecencyCandidates];
  };
  std::vector<double> sum_of(origins), count_of(origins);
  auto band_of_known = [&](size_t end) {
    Band band;
    std::fill(std::begin(band.factor), std::end(band.factor), 1.0);
    const size_t n = known.size();
    if (n < 10) return band;
    const double pos = 0.5 * static_cast<double>(n - 1);
    const size_t lo = static_cast<size_t>(pos);
    const double median_z =
        known[lo].first +
        (pos - static_cast<double>(lo)) * (known[std::min(lo + 1, n - 1)].first - known[lo].first);
    // The deviations below the median fall as the values rise and those above rise with them:
    // merging the two runs sorts them.
    const size_t split = static_cast<size_t>(
        std::lower_bound(known.begin(), known.end(), std::make_pair(median_z, size_t{0})) -
        known.begin());
    std::fill(sum_of.begin(), sum_of.end(), 0.0);
    std::fill(count_of.begin(), count_of.end(), 0.0);
    band.spread.reserve(n);
    size_t below = split, above = split;
    while (below > 0 || above < n) {
      const bool take_below = above == n || (below > 0 && median_z - known[below - 1].first <=
                                                              known[above].first - median_z);
      const auto& [z, origin] = take_below ? known[--below] : known[above++];
      const double deviation = std::fabs(z - median_z);
      band.spread.push_back(deviation);
      sum_of[origin] += deviation;
      count_of[origin] += 1;
    }
    double sum = 0;
    for (size_t j = 0; j < end; ++j) sum += sum_of[j];
    if (!(sum > 0)) return band;
    for (size_t c = 0; c < kRecencyCandidates; ++c) {
      if (std::isinf(kRecencyHalfLives[c]) || kRecencyHalfLives[c] < shortest) continue;
      double weighted_sum = 0, weight = 0;
      for (size_t j = 0; j < end; ++j) {
        const double w = std::exp2(-static_cast<double>(end - 1 - j) / kRecencyHalfLives[c]);
        weighted_sum += w * sum_of[j];
        weight += w * count_of[j];
      }
      band.factor[c] = (weighted_sum / weight) / (sum / static_cast<double>(n));
    }
    return band;
  };

  // Each origin of the later half against the band from what was known before it.
  double loss[kRecencyCandidates] = {};
  for (size_t k = origins / 2; k < origins; ++k) {
    if (errors_of[k].empty()) continue;  // nothing to score, and no step to learn up to
    learn(k, start[k]);
    const Band band = band_of_known(k);
    if (band.spread.empty()) continue;
    for (size_t c = 0; c < kRecencyCandidates; ++c) {
      for (double q : levels) {
        const double zq = band.factor[c] * BandZ(band.spread, q, anchor);
        for (size_t i : errors_of[k]) {
          loss[c] += std::max(q * (standardised[i] - zq), (q - 1) * (standardised[i] - zq));
        }
      }
    }
  }
  double best_loss = kInf;
  size_t best = 0;
  for (size_t c = 0; c < kRecencyCandidates; ++c) {
    if (kRecencyHalfLives[c] >= shortest && loss[c] < best_loss) {
      best_loss = loss[c];
      best = c;
    }
  }
  choice.half_life_origins = kRecencyHalfLives[best];
  learn(origins, kNone);
  choice.factor = band_of_known(origins).factor[best];
  return choice;
}

Result<Forecast> TitanForecaster::Predict(const RegularSeries& full_history, int64_t horizon_steps,
                                          const std::vector<double>& levels) const {
  if (horizon_steps < 1) return InvalidArgumentError("the horizon must be at least one step");
  const size_t horizon = static_cast<size_t>(horizon_steps);
  const RegularSeries s = RecentHistory(full_history, horizon);
  const size_t n = s.values.size();
  const size_t observed = s.Observed();
  if (observed < kMinHistorySteps) {
    return InvalidArgumentError(
        fmt::format("titan's model needs at least {} observed steps of history; the series has {}",
                    kMinHistorySteps, observed));
  }
  const std::vector<double>& y = s.values;
  bool non_negative = true;
  for (double v : y) non_negative = non_negative && !(v < 0);

  // The levels the seasonal profile is fitted around: a running median over a day and, when
  // the history holds the weekly cycle, over a week (a day's median follows a quiet weekend
  // down, leaving little of the weekly cycle to the profile; a week's median keeps it there).
  const std::vector<Cycle> cycles = CyclesFor(s.step_seconds, n);
  std::vector<Decomposition> decompositions(1);
  decompositions[0].half =
      std::max<size_t>(1, static_cast<size_t>(kDaySeconds / s.step_seconds / 2));
  for (const Cycle& c : cycles) {
    if (c.period_seconds > kDaySeconds) {
      decompositions.push_back(
          {static_cast<size_t>(c.period_seconds / s.step_seconds / 2), {}, {}});
    }
  }
  const RunningMedians running(y);
  for (Decomposition& d : decompositions) d.full_median = running.Of(n, d.half);
  // The Fourier terms of every fit below: the cycles of the whole history over it and the
  // horizon (a fit at an early origin uses the day's columns when its history is too short for
  // the week).
  const FourierTable table(cycles, s.start_seconds, s.step_seconds, n + horizon);
  auto span_at = [&](size_t origin) { return std::min(horizon, n - origin); };
  for (Decomposition& d : decompositions) {
    for (size_t o : InnerOrigins(n, kInnerOrigins)) {
      d.fits.push_back(FitAt(s, table, running, o, span_at(o), d.full_median, d.half));
    }
  }
  const std::vector<OriginFit>& fits = decompositions[0].fits;

  // The profile model: the grid's best cell.
  Grid grid;
  grid.gammas = cycles.empty() ? std::vector<double>{0} : std::vector<double>{0, 0.5, 1};
  grid.windows = Doublings(4, n);
  grid.windows.push_back(n);
  grid.half_lives = {0};
  for (size_t v : Doublings(1, 2 * std::max(n, horizon))) grid.half_lives.push_back(v);
  grid.half_lives.push_back(kInf);
  const Params best = ChooseProfileModel(y, decompositions, grid, horizon);
  std::vector<std::vector<double>> profile_paths;
  for (const OriginFit& fit : decompositions[best.decomposition].fits) {
    profile_paths.push_back(ProfilePath(y, fit, best, span_at(fit.origin)));
  }

  // The seasonal median with the least error at the same origins.
  const MedianChoice median = ChooseSeasonalMedian(y, fits, s.step_seconds, horizon);
  const SeasonalMedian& best_median = median.median;
  const double best_median_score = median.score;
  const std::vector<std::vector<double>>& median_paths = median.paths;
  // The mean of the two, which errs less than either where their errors differ.
  std::vector<std::vector<double>> mean_paths;
  if (best_median.period > 0) {
    for (size_t k = 0; k < fits.size(); ++k) {
      mean_paths.push_back(MeanOf(profile_paths[k], median_paths[k]));
    }
  }
  const double mean_score = best_median.period > 0 ? PathScore(y, fits, mean_paths, horizon) : kInf;
  enum class Choice { kProfile, kMedian, kMean } choice = Choice::kProfile;
  double chosen_score = PathScore(y, fits, profile_paths, horizon);
  if (best_median_score < chosen_score) {
    choice = Choice::kMedian;
    chosen_score = best_median_score;
  }
  if (mean_score < chosen_score) {
    choice = Choice::kMean;
    chosen_score = mean_score;
  }
  const std::vector<std::vector<double>>& chosen_paths = choice == Choice::kProfile  ? profile_paths
                                                         : choice == Choice::kMedian ? median_paths
                                                                                     : mean_paths;

  const InnerErrors inner = StandardisedErrors(y, fits, chosen_paths, horizon);
  // The forecast from the whole history.
  const Decomposition& chosen = decompositions[best.decomposition];
  const OriginFit final_fit = FitAt(s, table, running, n, horizon, chosen.full_median, chosen.half);
  const std::vector<double> final_median = best_median.period > 0
                                               ? SeasonalMedianPath(y, n, horizon, best_median)
                                               : std::vector<double>();
  Forecast f;
  f.model = std::string(name());
  f.start_seconds = s.TimeAt(n);
  f.step_seconds = s.step_seconds;
  f.quantile_levels = levels;
  switch (choice) {
    case Choice::kProfile:
      f.point = ProfilePath(y, final_fit, best, horizon);
      break;
    case Choice::kMedian:
      f.point = final_median;
      break;
    case Choice::kMean:
      f.point = MeanOf(ProfilePath(y, final_fit, best, horizon), final_median);
      break;
  }
  const bool enough = inner.standardised.size() >= 10;
  const double anchor = enough ? ChooseTailAnchor(inner.standardised, inner.origin_of, levels) : 1;
  const RecencyChoice recency =
      enough ? ChooseRecency(inner.standardised, inner.origin_of, inner.time_of, levels, anchor)
             : RecencyChoice{};
  std::vector<double> band_scale = inner.scale;
  for (double& v : band_scale) v *= recency.factor;
  f.quantiles = enough
                    ? BandFromInnerErrors(f.point, band_scale, inner.standardised, levels, anchor)
                    : GaussianBand(y, f.point, levels);

  const std::string profile_text =
      fmt::format("seasonal profile{} x{:g}{}, level = median over {}, reverts with half-life {}",
                  best.decomposition > 0 ? " about the week's median" : "", best.gamma,
                  final_fit.has_cycles ? "" : " (no cycle: history too short)",
                  best.window >= n ? "the whole history"
                                   : Steps(static_cast<double>(best.window), s.step_seconds),
                  Steps(best.half_life, s.step_seconds));
  const std::string median_text =
      best_median.period > 0 ? DescribeSeasonalMedian(best_median, s.step_seconds) : "";
  const std::string model_text =
      choice == Choice::kProfile  ? profile_text
      : choice == Choice::kMedian ? median_text
                                  : fmt::format("the mean of {} and {}", profile_text, median_text);
  f.description = fmt::format(
      "{}; chosen by {} inner origins (MAE {:.4g}){}{}", model_text, fits.size(), chosen_score,
      anchor < 1 ? fmt::format("; band exponential beyond its central {:g}%", 100 * anchor) : "",
      std::isinf(recency.half_life_origins)
          ? ""
          : fmt::format("; band x{:.2f} as the recent origins erred (half-life {:g} origins)",
                        recency.factor, recency.half_life_origins));
  FinishForecast(non_negative, &f);
  return f;
}

}  // namespace titan::plan
