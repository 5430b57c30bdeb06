// The forecasters and the backtest: accuracy and calibration on series with a known law,
// robustness to gaps, outliers and idle stretches, and the scores computed by hand.
#include <cmath>
#include <random>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/plan/backtest.h"
#include "src/plan/forecast.h"
#include "src/plan/seasonality.h"
#include "src/plan/titan_model.h"

namespace titan::plan {
namespace {

using ::testing::HasSubstr;

constexpr double kStartSeconds = 1588291200;

// Hourly demand: a daily cycle of amplitude 20 around a level that reverts (AR(1), phi 0.9 per
// hour) plus noise; 35 days.
RegularSeries Synthetic(uint64_t seed, size_t days = 35) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> shock(0, 4);
  RegularSeries s;
  s.name = "synthetic";
  s.start_seconds = kStartSeconds;
  s.step_seconds = 3600;
  double deviation = 0;
  for (size_t t = 0; t < days * 24; ++t) {
    deviation = 0.9 * deviation + shock(rng);
    s.values.push_back(100 + 20 * std::sin(2 * M_PI * static_cast<double>(t % 24) / 24) +
                       deviation);
  }
  return s;
}

const ModelScore& ScoreOf(const BacktestResult& r, const std::string& model) {
  for (const ModelScore& s : r.scores) {
    if (s.model == model) return s;
  }
  ADD_FAILURE() << "no model " << model;
  return r.scores.front();
}

TEST(TitanModelTest, BeatsSeasonalNaiveAndIsCalibratedOnAKnownLaw) {
  const RegularSeries s = Synthetic(7);
  BacktestOptions o;
  o.horizon_steps = 24;
  o.origins = 20;
  auto r = RunBacktest(s, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ModelScore& titan = ScoreOf(*r, "titan");
  const ModelScore& naive = ScoreOf(*r, "seasonal_naive");
  EXPECT_LT(titan.mase, 0.85 * naive.mase);
  EXPECT_LT(titan.pinball.at(0.95), naive.pinball.at(0.95));
  EXPECT_NEAR(titan.coverage.at("0.9"), 0.9, 0.06);
  EXPECT_NEAR(titan.calibration.at(0.5), 0.5, 0.12);
}

TEST(TitanModelTest, GapsOutliersAndAnIdleDayLeaveFiniteOrderedNonNegativeQuantiles) {
  RegularSeries s = Synthetic(3, 21);
  for (size_t t = 100; t < 130; ++t) s.values[t] = kNaN;  // a gap
  for (size_t t = 200; t < 224; ++t) s.values[t] = 0;     // an idle (or lost) day
  s.values[300] = 1e6;                                    // an outlier
  auto f = MakeForecaster("titan")->Predict(s, 168, {0.05, 0.5, 0.95, 0.99});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (size_t h = 0; h < 168; ++h) {
    for (size_t q = 0; q < 4; ++q) {
      ASSERT_TRUE(std::isfinite(f->quantiles[q][h]));
      EXPECT_GE(f->quantiles[q][h], 0);
      if (q > 0) {
        EXPECT_LE(f->quantiles[q - 1][h], f->quantiles[q][h]);
      }
    }
    // The outlier and the idle day barely move the forecast: it stays near the series' level.
    EXPECT_GT(f->point[h], 40);
    EXPECT_LT(f->point[h], 160);
  }
}

// Hourly: `law(t)` plus Gaussian noise of sd `sd`, for `days` days.
template <typename Law>
RegularSeries Noisy(uint64_t seed, size_t days, double sd, Law law) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, sd);
  RegularSeries s;
  s.start_seconds = kStartSeconds;
  s.step_seconds = 3600;
  for (size_t t = 0; t < days * 24; ++t) s.values.push_back(law(t) + noise(rng));
  return s;
}

TEST(TitanModelTest, ARiseInTheHistoryIsNotCarriedIntoTheForecast) {
  // Demand rose for two weeks and has stood at 100 for a week: the inner backtest's errors are
  // mostly "too low" (its early origins saw the rise), which says nothing about the next days.
  const RegularSeries s = Noisy(11, 21, 0.5, [](size_t t) {
    return 100 * std::min(1.0, static_cast<double>(t) / (14 * 24));
  });
  auto f = MakeForecaster("titan")->Predict(s, 48, {0.05, 0.5, 0.95});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  double sum = 0;
  for (size_t h = 0; h < 48; ++h) {
    sum += f->point[h];
    EXPECT_EQ(f->point[h], f->quantiles[1][h]) << "the point is the median at step " << h;
    EXPECT_NEAR(f->point[h] - f->quantiles[0][h], f->quantiles[2][h] - f->point[h], 1e-9)
        << "the band is symmetric at step " << h;
  }
  EXPECT_NEAR(sum / 48, 100, 1) << f->description;  // two sds of the noise
}

TEST(TitanModelTest, ASharpDailyShapeIsForecastByTheSeasonalMedian) {
  // Two busy hours a day (100 GPUs, 10 otherwise): sharper than the profile's six daily
  // harmonics can draw, and just what the same hour of the last days shows.
  const RegularSeries s =
      Noisy(5, 16, 2, [](size_t t) { return t % 24 == 9 || t % 24 == 10 ? 100.0 : 10.0; });
  auto f = MakeForecaster("titan")->Predict(s, 48, {0.05, 0.5, 0.95});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  double error = 0;
  for (size_t h = 0; h < 48; ++h) {
    const size_t t = s.values.size() + h;
    error += std::fabs(f->point[h] - (t % 24 == 9 || t % 24 == 10 ? 100.0 : 10.0));
  }
  // Within the noise (sd 2) of the true shape.
  EXPECT_LT(error / 48, 2) << f->description;
  EXPECT_THAT(f->description, HasSubstr("days at that time"));
}

TEST(TitanModelTest, AQuietWeekendIsForecastAboutTheWeeksLevel) {
  // Busy weekdays (60 GPUs), quiet weekends (5), a daily swing of +-10; 16 days from a Friday.
  // A day's running median follows the weekend down, leaving the profile little of the weekly
  // cycle; about a week's median the profile keeps it (this forecast's error was 13.3 without).
  auto law = [](size_t t) {
    const bool weekend = (t / 24 + 4) % 7 >= 5;  // 2020-05-01 was a Friday
    return (weekend ? 5.0 : 60.0) + 10 * std::sin(2 * M_PI * static_cast<double>(t % 24) / 24);
  };
  const RegularSeries s = Noisy(3, 16, 4, law);
  auto f = MakeForecaster("titan")->Predict(s, 168, {0.05, 0.5, 0.95});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  double error = 0;
  for (size_t h = 0; h < 168; ++h) error += std::fabs(f->point[h] - law(s.values.size() + h));
  EXPECT_LT(error / 168, 10) << f->description;
  EXPECT_THAT(f->description, HasSubstr("the week's median"));
}

TEST(TitanModelTest, TheErrorScaleGrowsWithTheStepsAheadWithoutRatchetingOnOneNoisyStep) {
  // Step 1's errors are a noisy spike: a running maximum would keep 5 for every later step; the
  // isotonic fit pools it with the steps after it. Step 4 has too few errors and joins step 3.
  const std::vector<std::vector<double>> errors = {
      {1, -1, 1}, {5, -5, 5}, {2, -2, 2}, {-3, 3, 3}, {9}};
  const std::vector<double> scale = NonDecreasingMeanAbs(errors, 3);
  ASSERT_EQ(scale.size(), 5u);
  EXPECT_DOUBLE_EQ(scale[0], 1);
  for (size_t h = 1; h < 5; ++h) EXPECT_DOUBLE_EQ(scale[h], 10.0 / 3) << h;
  EXPECT_EQ(NonDecreasingMeanAbs({{1}, {2}}, 3), std::vector<double>({0, 0}));
}

// Standardised inner errors of `origins` origins, `per_origin` each: draw(origin, rng) gives one.
struct InnerSample {
  std::vector<double> errors;
  std::vector<size_t> origin_of;
  std::vector<size_t> time_of;  // origin k's errors at steps per_origin * k onwards
};
template <typename Draw>
InnerSample Sample(size_t origins, size_t per_origin, uint32_t seed, Draw draw) {
  std::mt19937 rng(seed);
  InnerSample out;
  for (size_t k = 0; k < origins; ++k) {
    for (size_t i = 0; i < per_origin; ++i) {
      out.errors.push_back(draw(k, rng));
      out.origin_of.push_back(k);
      out.time_of.push_back(per_origin * k + i);
    }
  }
  return out;
}

const std::vector<double> kBandLevels = {0.05, 0.5, 0.95, 0.99};

// One wild origin (an event the rest of the history never repeats) would put the 1-in-100
// quantile at its errors; the other origins' errors predict the far tail better through a
// central quantile.
TEST(TitanModelTest, OneWildInnerOriginDoesNotSetTheFarTail) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const InnerSample s = Sample(40, 60, seed, [](size_t k, std::mt19937& rng) {
      return std::normal_distribution<double>(0, k == 0 ? 20 : 1)(rng);
    });
    EXPECT_LT(ChooseTailAnchor(s.errors, s.origin_of, kBandLevels), 1) << "seed " << seed;
  }
}

// A heavy tail that every origin shares (1 error in 20 is ten times wider) is the errors' own:
// an exponential tail through a central quantile would be too narrow at 0.99.
TEST(TitanModelTest, AHeavyTailEveryOriginSharesIsKept) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const InnerSample s = Sample(40, 60, seed, [](size_t, std::mt19937& rng) {
      const bool wide = std::uniform_real_distribution<double>(0, 1)(rng) < 0.05;
      return std::normal_distribution<double>(0, wide ? 10 : 1)(rng);
    });
    EXPECT_EQ(ChooseTailAnchor(s.errors, s.origin_of, kBandLevels), 1) << "seed " << seed;
  }
}

TEST(TitanModelTest, TooFewInnerErrorsKeepTheirOwnQuantiles) {
  const InnerSample s = Sample(4, 4, 1, [](size_t k, std::mt19937& rng) {
    return std::normal_distribution<double>(0, k == 0 ? 20 : 1)(rng);
  });
  EXPECT_EQ(ChooseTailAnchor(s.errors, s.origin_of, kBandLevels), 1);
}

// The errors' size moves in spells: the last third of the origins is three times calmer than
// the rest, so the band from the recent origins predicts the next one's errors better.
TEST(TitanModelTest, ACalmRecentSpellNarrowsTheBand) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const InnerSample s = Sample(30, 60, seed, [](size_t k, std::mt19937& rng) {
      return std::normal_distribution<double>(0, k < 20 ? 3 : 1)(rng);
    });
    const RecencyChoice r = ChooseRecency(s.errors, s.origin_of, s.time_of, kBandLevels, 1);
    EXPECT_FALSE(std::isinf(r.half_life_origins)) << "seed " << seed;
    EXPECT_LT(r.factor, 0.8) << "seed " << seed;
  }
}

// Origins 10 steps apart forecasting 60 steps (each origin's errors overlap the next five's): no
// half-life is shorter than the 6 origins one horizon spans.
TEST(TitanModelTest, TheRecentSpellSpansAHorizonAtLeast) {
  const InnerSample s = Sample(30, 60, 1, [](size_t k, std::mt19937& rng) {
    return std::normal_distribution<double>(0, k < 20 ? 3 : 1)(rng);
  });
  std::vector<size_t> overlapping(s.time_of.size());
  for (size_t i = 0; i < overlapping.size(); ++i) {
    overlapping[i] = 10 * s.origin_of[i] + s.time_of[i] % 60;
  }
  const RecencyChoice r = ChooseRecency(s.errors, s.origin_of, overlapping, kBandLevels, 1);
  EXPECT_GE(r.half_life_origins, 6);

  // The same a long way into the series with the first origin's span all gaps (no errors): the
  // spacing is the other origins'.
  InnerSample later;
  for (size_t i = 0; i < s.errors.size(); ++i) {
    if (s.origin_of[i] == 0) continue;
    later.errors.push_back(s.errors[i]);
    later.origin_of.push_back(s.origin_of[i]);
    later.time_of.push_back(10000 + overlapping[i]);
  }
  const RecencyChoice gap =
      ChooseRecency(later.errors, later.origin_of, later.time_of, kBandLevels, 1);
  EXPECT_GE(gap.half_life_origins, 6);
}

// Errors of one size throughout, or sizes that change from origin to origin with no spell to
// follow: the whole history's band is the better guess, and the band is as wide as before.
TEST(TitanModelTest, ErrorsWithoutSpellsKeepTheWholeHistorysBand) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const InnerSample same = Sample(30, 60, seed, [](size_t, std::mt19937& rng) {
      return std::normal_distribution<double>(0, 1)(rng);
    });
    const RecencyChoice a =
        ChooseRecency(same.errors, same.origin_of, same.time_of, kBandLevels, 1);
    EXPECT_TRUE(std::isinf(a.half_life_origins)) << "seed " << seed;
    EXPECT_DOUBLE_EQ(a.factor, 1) << "seed " << seed;
    const InnerSample alternating = Sample(30, 60, seed, [](size_t k, std::mt19937& rng) {
      return std::normal_distribution<double>(0, k % 2 == 0 ? 3 : 1)(rng);
    });
    const RecencyChoice b = ChooseRecency(alternating.errors, alternating.origin_of,
                                          alternating.time_of, kBandLevels, 1);
    EXPECT_TRUE(std::isinf(b.half_life_origins)) << "seed " << seed;
  }
}

TEST(TitanModelTest, AnAllZeroSeriesForecastsZero) {
  RegularSeries s;
  s.step_seconds = 600;
  s.values.assign(2000, 0.0);
  auto f = MakeForecaster("titan")->Predict(s, 144, {0.05, 0.5, 0.95});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (size_t h = 0; h < 144; ++h) {
    EXPECT_EQ(f->point[h], 0);
    EXPECT_EQ(f->quantiles[2][h], 0);
  }
}

TEST(TitanModelTest, TooShortAHistorySaysHowMuchIsNeeded) {
  RegularSeries s;
  s.step_seconds = 60;
  s.values = {1, 2, 3};
  auto f = MakeForecaster("titan")->Predict(s, 10, {0.5});
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(std::string(f.status().message()), HasSubstr("at least 8 observed steps"));
}

TEST(SeasonalNaiveTest, RepeatsTheLastDay) {
  RegularSeries s;
  s.step_seconds = 3600 * 6;  // four steps a day
  s.values = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  auto f = MakeForecaster("seasonal_naive")->Predict(s, 6, {0.5});
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(f->point, ::testing::ElementsAre(7, 8, 9, 10, 7, 8));
}

TEST(SeasonalityTest, ATableKeepsOnePeriodAndAgreesWithTheTimes) {
  // Three weeks of hourly values with daily and weekly cycles, noise and gaps.
  std::vector<double> residual;
  uint64_t state = 7;
  for (int t = 0; t < 24 * 21; ++t) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const double noise = static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5;
    residual.push_back(5 * std::sin(2 * M_PI * t / 24.0) + 3 * std::cos(2 * M_PI * t / 168.0) +
                       noise);
  }
  residual[100] = kNaN;
  const std::vector<Cycle> cycles = CyclesFor(3600, residual.size());
  ASSERT_EQ(cycles.size(), 2u);
  const FourierTable table(cycles, kStartSeconds, 3600, residual.size() + 48);
  EXPECT_EQ(table.period_rows(), 168u);  // the week, which the day divides
  for (int c = 0; c < 18; ++c) EXPECT_EQ(table.Row(5)[c], table.Row(5 + 2 * 168)[c]) << c;
  // The day's columns alone are the table's first.
  EXPECT_EQ(table.ColumnsOf({cycles[0]}), 2 * cycles[0].harmonics);
  EXPECT_EQ(table.ColumnsOf({cycles[1]}), -1);
  const SeasonalProfile by_time = SeasonalProfile::Fit(residual, kStartSeconds, 3600, cycles, 48);
  const SeasonalProfile by_table =
      SeasonalProfile::Fit(residual, table, cycles, table.ColumnsOf(cycles), 48);
  for (size_t t = 0; t < table.rows(); ++t) {
    EXPECT_NEAR(by_table.At(table, t), by_time.At(kStartSeconds + 3600.0 * t), 1e-9) << t;
  }
}

TEST(SeasonalityTest, SlidingMediansAreTheMediansOfTheirWindows) {
  // Ties, gaps and windows cut by the start and by `end`, against sorting each window.
  std::mt19937_64 rng(9);
  std::uniform_int_distribution<int> value(0, 20);
  std::vector<double> y(300);
  for (size_t i = 0; i < y.size(); ++i) y[i] = i % 17 == 3 ? kNaN : value(rng);
  for (size_t i = 100; i < 140; ++i) y[i] = kNaN;  // a gap longer than a window
  const RunningMedians medians(y);
  for (size_t end : {1, 50, 299, 300}) {
    for (size_t half : {0, 1, 6, 144}) {
      for (size_t from : {size_t{0}, end / 2, end - 1}) {
        const std::vector<double> got = medians.Of(end, half, from);
        ASSERT_EQ(got.size(), end);
        for (size_t i = 0; i < end; ++i) {
          const double want =
              i < from ? kNaN
                       : WindowMedian(y, i >= half ? i - half : 0, std::min(end, i + half + 1));
          if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got[i])) << end << " " << half << " " << from << " " << i;
          } else {
            EXPECT_EQ(got[i], want) << end << " " << half << " " << from << " " << i;
          }
        }
      }
    }
  }
}

TEST(SeasonalityTest, FitsADailyCycleThroughAnOutlier) {
  std::vector<double> residual;
  for (int t = 0; t < 24 * 14; ++t) residual.push_back(10 * std::cos(2 * M_PI * (t % 24) / 24.0));
  residual[50] = 5000;
  const SeasonalProfile p =
      SeasonalProfile::Fit(residual, kStartSeconds, 3600, CyclesFor(3600, residual.size()), 1e9);
  for (int t = 0; t < 24; ++t) {
    EXPECT_NEAR(p.At(kStartSeconds + 3600.0 * t), 10 * std::cos(2 * M_PI * t / 24.0), 0.05);
  }
  EXPECT_EQ(CyclesFor(3600, 24 * 13).size(), 1u);  // a week needs two weeks of history
  EXPECT_EQ(CyclesFor(3600, 24 * 14).size(), 2u);
  EXPECT_TRUE(CyclesFor(7 * 86400, 100).empty());
}

// The scores by hand: two origins of a 3-step horizon on a known series.
TEST(BacktestTest, ScoresAsDefined) {
  RegularSeries s;
  s.name = "s";
  s.step_seconds = 86400 / 2;  // two steps a day: MASE's period is 2 steps
  s.values = {1, 3, 2, 4, 0, 0, 5, 7, 6, 8};
  BacktestResult r;
  r.season_steps = 2;
  r.horizon_steps = 2;
  r.origins = {4, 6};
  r.origin_times = {0, 0};
  r.levels = {0.05, 0.5, 0.95};
  std::vector<OriginForecast> f(2);
  f[0] = {4, {0, 1}, {{0.05, {0, 0}}, {0.5, {0, 1}}, {0.95, {1, 1}}}};
  f[1] = {6, {5, 5}, {{0.05, {4, 4}}, {0.5, {5, 5}}, {0.95, {6, 6}}}};
  ASSERT_TRUE(ScoreExternal(s, "m", f, &r).ok());
  const ModelScore& m = r.scores.back();
  // Origin 4: in-sample |y_t - y_{t-2}| over t = 2, 3: 1, 1 -> scale 1; MAE (0 + 1) / 2.
  // Origin 6: t = 2..5: 1, 1, 2, 4 -> scale 2; MAE (0 + 2) / 2 = 1 -> 0.5. Mean 0.5.
  EXPECT_DOUBLE_EQ(m.mase, 0.5);
  // sMAPE: origin 4: 0/0 -> 0, 200 * 1 / 1 = 200 -> 100; origin 6: 0, 200 * 2 / 12 -> 16.67.
  EXPECT_NEAR(m.smape, (100 + 200.0 / 12) / 2, 1e-9);
  // Coverage of [q05, q95]: (0 in [0,1]) yes, (0 in [0,1]) yes, 5 in [4,6] yes, 7 no -> 3/4.
  EXPECT_DOUBLE_EQ(m.coverage.at("0.9"), 0.75);
  // Pinball at 0.95: errors y - f: 0-1, 0-1, 5-6, 7-6 -> 0.05, 0.05, 0.05, 0.95 -> mean 0.275.
  EXPECT_NEAR(m.pinball.at(0.95), 0.275, 1e-12);
  // Scaled as MASE is, per origin: at 0.95 origin 4 (0.05 + 0.05) / 2 / 1 = 0.05, origin 6
  // (0.05 + 0.95) / 2 / 2 = 0.25 -> 0.15; at 0.5 (the point) half of MASE.
  EXPECT_NEAR(m.scaled_pinball.at(0.95), 0.15, 1e-12);
  EXPECT_DOUBLE_EQ(m.scaled_pinball.at(0.5), m.mase / 2);
  const nlohmann::json j = BacktestJson(r);
  EXPECT_TRUE(j["models"]["m"]["scaled_pinball"].contains("0.95"));
  EXPECT_EQ(j["default_model"], "titan");
  EXPECT_TRUE(j["models"]["m"]["pinball"].contains("0.95"));
  EXPECT_TRUE(j["models"]["m"]["coverage"].contains("0.9"));
}

TEST(BacktestTest, OriginsNeedRoomAndSaySo) {
  RegularSeries s;
  s.step_seconds = 3600;
  s.values.assign(50, 1.0);
  BacktestOptions o;
  o.horizon_steps = 24;
  o.origins = 14;
  o.min_train_steps = 20;
  auto origins = BacktestOrigins(s, o);
  ASSERT_FALSE(origins.ok());
  EXPECT_THAT(std::string(origins.status().message()), HasSubstr("fewer --origins"));
  o.origins = 7;
  origins = BacktestOrigins(s, o);
  ASSERT_TRUE(origins.ok());
  EXPECT_EQ(origins->front(), 20u);
  EXPECT_EQ(origins->back(), 26u);  // the last leaves exactly one horizon
}

TEST(BacktestTest, ExternalForecastsAreReadInOrder) {
  auto f = ReadExternalForecasts(
      "model,origin,h,point,0.05,0.95\nr_stlf,10,1,5,4,6\nr_stlf,10,2,5.5,4,7\n", "r.csv");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const OriginForecast& o = f->at("r_stlf").front();
  EXPECT_EQ(o.origin, 10u);
  EXPECT_THAT(o.point, ::testing::ElementsAre(5, 5.5));
  EXPECT_THAT(o.quantiles.at(0.95), ::testing::ElementsAre(6, 7));
  auto gap = ReadExternalForecasts("model,origin,h,point\nm,1,2,5\n", "r.csv");
  ASSERT_FALSE(gap.ok());
  EXPECT_THAT(std::string(gap.status().message()), HasSubstr("r.csv:2: step 2"));
}

TEST(BacktestTest, AQuantileLevelGivenTwiceIsRefused) {
  // Found by backtest_fuzzer: 0.05 and 0.050 are one level, so their columns would fill one band.
  auto twice = ReadExternalForecasts("model,origin,h,point,0.05,0.050\nm,10,1,5,4,6\n", "r.csv");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(std::string(twice.status().message()),
              HasSubstr("r.csv:1: quantile level '0.050' is given twice"));
}

TEST(NormalQuantileTest, MatchesKnownValues) {
  EXPECT_NEAR(NormalQuantile(0.5), 0, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.95), 1.6448536269514722, 1e-10);
  EXPECT_NEAR(NormalQuantile(0.01), -2.3263478740408408, 1e-10);
}

}  // namespace
}  // namespace titan::plan
