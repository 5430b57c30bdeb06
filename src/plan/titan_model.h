// titan's forecaster ("titan" in MakeForecaster; docs/plan.md has the long form).
//
// The series is split into a seasonal profile S (seasonality.h: daily and weekly Fourier terms,
// bisquare-robust, recent weeks weighing more, fitted to the series less its running median over
// a day or, when the history holds two weeks, over a week: a day's median follows a quiet
// weekend down and leaves the profile little of the weekly cycle) and the rest a = y - gamma S.
// The forecast h steps
// after the origin is
//     y(t + h) = gamma S(t + h) + mu + (c - mu) 2^(-h / tau)
// where c is the last observed a, mu the median of a over the last W steps (the level it reverts
// to) and tau the half-life of the reversion (0: at once; infinite: never, the level persists).
// Demand on a GPU cluster or a service is like that: a level that jobs and users move in steps,
// that tends back to its recent norm, around a daily and weekly cycle that may be weak.
//
// The median's span, gamma (0, 1/2, 1), W (1, 3, 7, 14 days, all) and tau (0, 1 h ... 7 d,
// infinite) are chosen per series by an inner rolling-origin backtest on the history alone: up
// to kInnerOrigins origins in its last two thirds, each fitted only on what came before it,
// scored by the mean absolute error per horizon step averaged over the steps (so every step
// counts alike, as in MASE).
// The same backtest scores the seasonal median (the median of the same time of the last 1, 3
// or 7 days, or the last 1 or 2 weeks: seasonal naive and its robust kin, which draw a sharp
// daily shape that a few harmonics cannot) and the mean of the two best; the one with the
// least error is the forecast. The quantiles are the point plus and minus s(h) times quantiles
// of the pooled absolute standardised errors of that backtest about their median, s(h) being
// the mean absolute error at step h fitted non-decreasing (isotonic regression): the point is
// the median, the band is symmetric, and a bias the inner backtest saw (a history that rose) is
// not carried into the future. Beyond a central share chosen by cross-validating the inner
// origins against each other (ChooseTailAnchor), the band's tail is exponential; where the
// errors' size moves in spells, the band is widened or narrowed as the recent origins erred
// (ChooseRecency).
//
// Thread safety: immutable; Predict is reentrant.
#pragma once

#include <limits>

#include "src/plan/forecast.h"

namespace titan::plan {

class TitanForecaster : public Forecaster {
 public:
  static constexpr int kInnerOrigins = 30;
  // The history used: the last 12 weeks (or 4 horizons, if longer); older data hardly moves
  // a level that reverts within days, and keeps the fit's cost bounded.
  static constexpr double kMaxHistorySeconds = 84 * 86400.0;

  std::string_view name() const override { return "titan"; }
  Result<Forecast> Predict(const RegularSeries& history, int64_t horizon_steps,
                           const std::vector<double>& levels) const override;
};

// The mean absolute value of errors[h] for each step h, fitted non-decreasing in h by pool
// adjacent violators (isotonic regression weighted by the number of errors at each step);
// steps with fewer than `min_count` errors join the block before them (the first block's value
// before any block); all 0 when no step has enough. The result has errors.size() values.
std::vector<double> NonDecreasingMeanAbs(const std::vector<std::vector<double>>& errors,
                                         size_t min_count);

// The band's tail, chosen by two-fold cross-validation over the inner origins (even against odd
// `origin_of`): each candidate's band from one half's standardised errors is scored by the
// pinball loss at `levels` on the other half's. A band's half-width at central share
// s = |2q - 1| is the quantile s of the errors' absolute deviations from their median up to the
// anchor; beyond it an exponential (Laplace) tail through the anchor's quantile. Candidates: 1
// (the errors' own quantiles throughout), 0.9, 0.8, 0.7, 0.5; the first wins ties, and is the
// answer when either half has fewer than 10 errors. Why: errors within an inner origin are
// correlated, so a few dozen origins put a 1-in-100 quantile at the worst one or two of them;
// where the history says a tail through a central quantile predicts its other half better,
// that tail is used. `standardised` and `origin_of` have one entry per error.
double ChooseTailAnchor(const std::vector<double>& standardised,
                        const std::vector<size_t>& origin_of, const std::vector<double>& levels);

// The band's recency: its width times `factor`, the inner errors' mean absolute deviation from
// their median with origin k weighted by 2^-(age / half_life_origins) over their plain mean (1
// when the half-life is infinite). The half-life (infinite, 16, 8, 4 or 2 origins, none shorter
// than the number of origins one horizon spans) is chosen by scoring each origin of the later
// half by the pinball loss at `levels` against the band (with the tail `anchor`) from the
// errors known when it was made: those of earlier origins at steps before its first. Where the
// errors' size moves in spells, the recent spell predicts the next origin's errors better than
// the whole history does (the weights of non-exchangeable conformal prediction, Barber et al.
// 2023); where it does not, the band is as before. The shortest half-life spans a horizon: a
// width for H steps ahead is not judged on less than H steps of history. `time_of` is the step
// of each error; an origin's errors start at its first step. Fewer than 8 origins: factor 1.
struct RecencyChoice {
  double half_life_origins = std::numeric_limits<double>::infinity();
  double factor = 1;
};
RecencyChoice ChooseRecency(const std::vector<double>& standardised,
                            const std::vector<size_t>& origin_of,
                            const std::vector<size_t>& time_of, const std::vector<double>& levels,
                            double anchor);

}  // namespace titan::plan
