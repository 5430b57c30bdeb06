#include "src/metrics/series.h"

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/metrics/registry.h"

namespace titan {
namespace {

const SignalDesc kUtil{
    "titan_test_utilization_ratio", "A test gauge.", SignalKind::kGauge, {"cpu"}, RatioBuckets()};
const SignalDesc kBytes{
    "titan_test_read_bytes_total", "A test counter.", SignalKind::kCounter, {}, {}};

constexpr int64_t kT0 = 1'700'000'000LL * kNsPerSecond;

TEST(SeriesTest, WindowKeepsA50msSpikeBetweenScrapes) {
  Series s(kUtil, {"0"}, 1000);
  // 15 s of samples every 100 ms at 0.2, with one 50 ms spike to 0.97 in the middle.
  for (int i = 0; i < 150; ++i) {
    const int64_t t = kT0 + i * 100 * kNsPerMs;
    s.RecordGauge(t, i == 75 ? 0.97 : 0.2);
  }
  const int64_t scrape = kT0 + 15 * kNsPerSecond;
  WindowStats w = s.Window(scrape, 15);
  EXPECT_EQ(w.count, 150u);
  EXPECT_DOUBLE_EQ(w.max, 0.97);
  EXPECT_DOUBLE_EQ(w.min, 0.2);
  EXPECT_DOUBLE_EQ(w.last, 0.2);
  EXPECT_NEAR(w.mean, 0.2 + (0.97 - 0.2) / 150, 1e-12);
  // A second scrape sees the same spike: scrapes do not reset anything.
  EXPECT_DOUBLE_EQ(s.Window(scrape, 15).max, 0.97);
  // 30 s later the spike has left the window.
  EXPECT_EQ(s.Window(scrape + 30 * kNsPerSecond, 15).count, 0u);
}

TEST(SeriesTest, WindowCoversAtLeastItsLength) {
  Series s(kUtil, {"0"}, 0);
  s.RecordGauge(kT0 + 500 * kNsPerMs, 5);  // at t0+0.5 s
  // Scraped at t0+15.9 s with a 15 s window: t0+0.9 s is 15 s ago, the sample is older but its
  // slot overlaps the window, so it is kept (windows may overlap, never leave gaps).
  EXPECT_EQ(s.Window(kT0 + 15'900 * kNsPerMs, 15).count, 1u);
  EXPECT_EQ(s.Window(kT0 + 16'900 * kNsPerMs, 15).count, 0u);
}

TEST(SeriesTest, RejectsNonFiniteValues) {
  Series s(kUtil, {"0"}, 10);
  EXPECT_FALSE(s.RecordGauge(kT0, std::numeric_limits<double>::quiet_NaN()));
  EXPECT_FALSE(s.RecordGauge(kT0, std::numeric_limits<double>::infinity()));
  EXPECT_EQ(s.Window(kT0, 15).count, 0u);
}

TEST(SeriesTest, HistogramIsCumulative) {
  Series s(kUtil, {"0"}, 0);
  s.RecordGauge(kT0, 0.01);
  s.RecordGauge(kT0, 0.5);
  s.RecordGauge(kT0, 2.0);  // above every bound: only +Inf
  std::vector<uint64_t> counts;
  double sum = 0;
  uint64_t count = 0;
  s.Histogram(&counts, &sum, &count);
  ASSERT_EQ(counts.size(), kUtil.buckets.size() + 1);
  EXPECT_EQ(counts.front(), 1u);             // le=0.05
  EXPECT_EQ(counts[3], 2u);                  // le=0.5
  EXPECT_EQ(counts[counts.size() - 2], 2u);  // le=1
  EXPECT_EQ(counts.back(), 3u);              // +Inf
  EXPECT_EQ(count, 3u);
  EXPECT_DOUBLE_EQ(sum, 2.51);
}

TEST(SeriesTest, CounterSurvivesSourceReset) {
  Series s(kBytes, {}, 10);
  s.SetCounter(kT0, 100);
  s.SetCounter(kT0 + 1, 150);
  s.SetCounter(kT0 + 2, 20);  // the source restarted from 0 and counted 20
  EXPECT_DOUBLE_EQ(s.CounterValue(), 170);
  s.AddCounter(kT0 + 3, 5);
  EXPECT_DOUBLE_EQ(s.CounterValue(), 175);
}

TEST(SeriesTest, RecorderKeepsTheNewestPoints) {
  Series s(kUtil, {"0"}, 4);
  for (int i = 0; i < 10; ++i) s.RecordGauge(kT0 + i, i);
  std::vector<RecordedPoint> points;
  s.RecorderRange(0, kT0 + 100, &points);
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points.front().value, 6);
  EXPECT_EQ(points.back().value, 9);
  points.clear();
  s.RecorderRange(kT0 + 7, kT0 + 8, &points);
  EXPECT_EQ(points.size(), 2u);
}

TEST(RegistryTest, BoundsSeriesCountAndRecorderBudget) {
  RegistryOptions options;
  options.max_series = 3;
  options.recorder_duration_ns = 10 * kNsPerSecond;
  options.recorder_budget_bytes = 150 * sizeof(RecordedPoint);
  MetricRegistry registry(options);
  Series* a = registry.GetOrCreate(kUtil, {"0"}, 100 * kNsPerMs);  // wants 101 points
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(registry.GetOrCreate(kUtil, {"0"}, 100 * kNsPerMs), a);
  ASSERT_NE(registry.GetOrCreate(kUtil, {"1"}, 100 * kNsPerMs), nullptr);  // gets the 49 left
  EXPECT_LE(registry.recorder_bytes(), options.recorder_budget_bytes);
  ASSERT_NE(registry.GetOrCreate(kUtil, {"2"}, 100 * kNsPerMs), nullptr);
  EXPECT_EQ(registry.GetOrCreate(kUtil, {"3"}, 100 * kNsPerMs), nullptr);
  EXPECT_EQ(registry.dropped_series(), 1u);
  EXPECT_EQ(registry.Find("titan_test_utilization_ratio{cpu=\"1\"}"),
            registry.GetOrCreate(kUtil, {"1"}, 0));
}

TEST(RegistryTest, RetiredSeriesFreeTheirPlaceAndReviveWithTheirTotals) {
  RegistryOptions options;
  options.max_series = 2;
  options.max_retired_series = 1;
  options.recorder_duration_ns = 10 * kNsPerSecond;
  MetricRegistry registry(options);
  Series* a = registry.GetOrCreate(kUtil, {"0"}, 100 * kNsPerMs);
  Series* b = registry.GetOrCreate(kUtil, {"1"}, 100 * kNsPerMs);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  a->RecordGauge(kT0, 0.5);
  EXPECT_EQ(registry.GetOrCreate(kUtil, {"2"}, 100 * kNsPerMs), nullptr);  // full
  const size_t bytes_with_both = registry.recorder_bytes();

  ASSERT_TRUE(registry.Retire(a));
  EXPECT_EQ(registry.series_count(), 1u);
  EXPECT_EQ(registry.retired_series_count(), 1u);
  EXPECT_LT(registry.recorder_bytes(), bytes_with_both);
  EXPECT_EQ(registry.Find(a->Key()), nullptr);
  EXPECT_EQ(registry.AllSeries(), std::vector<Series*>{b});
  std::vector<RecordedPoint> points;
  a->RecorderRange(0, INT64_MAX, &points);  // still readable by holders of the old pointer
  EXPECT_TRUE(points.empty());
  EXPECT_FALSE(registry.Retire(a));  // not live any more
  EXPECT_FALSE(registry.Retire(b));  // max_retired_series reached

  Series* c = registry.GetOrCreate(kUtil, {"2"}, 100 * kNsPerMs);  // the freed place
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(registry.dropped_series(), 1u);
}

TEST(RegistryTest, RetiredSeriesIsRevivedForTheSameLabels) {
  MetricRegistry registry;
  Series* a = registry.GetOrCreate(kUtil, {"0"}, 100 * kNsPerMs);
  ASSERT_NE(a, nullptr);
  a->RecordGauge(kT0, 0.25);
  ASSERT_TRUE(registry.Retire(a));
  EXPECT_EQ(registry.GetOrCreate(kUtil, {"0"}, 100 * kNsPerMs), a);
  EXPECT_EQ(registry.retired_series_count(), 0u);
  EXPECT_EQ(registry.series_count(), 1u);
  a->RecordGauge(kT0 + kNsPerSecond, 0.75);
  const WindowStats stats = a->Window(kT0 + kNsPerSecond, 15);
  EXPECT_EQ(stats.count, 1u);  // the window restarted with the revival
  EXPECT_EQ(stats.max, 0.75);
  std::vector<RecordedPoint> points;
  a->RecorderRange(0, INT64_MAX, &points);
  EXPECT_EQ(points.size(), 1u);
}

}  // namespace
}  // namespace titan
