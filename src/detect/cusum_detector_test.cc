#include "src/detect/cusum_detector.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "src/detect/detect_test_util.h"

namespace titan {
namespace {

using detect_test::BoundedNoise;
using detect_test::Feed;
using detect_test::TimeOf;

TEST(CusumDetectorTest, LevelShiftFoundWithExactStartOnAlternatingSignal) {
  // 10 +- 1 alternating (sigma 1), then 13 +- 1 from sample 500. z after the shift is 4
  // (clamped to 3) and 2: S+ = 2, 3, 5, 6, 8, 9 > h = 8 at sample 505. Before the shift z is
  // +-1, never above the drift, so S+ stays 0 and the change point estimate is sample 500.
  std::vector<double> values;
  for (int i = 0; i < 1000; ++i) values.push_back((i < 500 ? 10 : 13) + (i % 2 == 0 ? 1 : -1));
  CusumDetector detector{CusumOptions{}};
  std::vector<Detection> found = Feed(detector, values);
  ASSERT_EQ(found.size(), 1u);
  const Detection& d = found[0];
  EXPECT_STREQ(d.detector, "cusum");
  EXPECT_STREQ(d.direction, "spike");
  EXPECT_EQ(d.start_ns, TimeOf(500));
  EXPECT_EQ(d.end_ns, TimeOf(505));
  EXPECT_EQ(d.samples, 6);
  EXPECT_EQ(d.peak, 14);
  EXPECT_NEAR(d.baseline, 10, 0.05);
  EXPECT_NEAR(d.level, 13, 1e-9);
  EXPECT_GT(d.score, 8);
  EXPECT_NEAR(detector.mean(), 13, 0.1);  // re-baselined to the new level, stays quiet after
}

TEST(CusumDetectorTest, ShiftDownAndBackInNoise) {
  // A throughput that drops by 2.5 sigma for 300 samples: two shifts, each found within a few
  // samples of where it happened (the estimate may start a little early when noise had already
  // lifted S above 0).
  std::vector<double> values = BoundedNoise(1500, 50, 10);
  for (int i = 600; i < 900; ++i) values[i] -= 1.5;  // sigma of the noise is 0.577
  CusumDetector detector{CusumOptions{}};
  std::vector<Detection> found = Feed(detector, values);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_STREQ(found[0].direction, "dip");
  EXPECT_GE(found[0].start_ns, TimeOf(590));
  EXPECT_LE(found[0].start_ns, TimeOf(600));
  EXPECT_LE(found[0].end_ns, TimeOf(612));
  EXPECT_NEAR(found[0].baseline, 50, 0.15);
  EXPECT_NEAR(found[0].level, 48.5, 0.6);
  EXPECT_STREQ(found[1].direction, "spike");
  EXPECT_GE(found[1].start_ns, TimeOf(890));
  EXPECT_LE(found[1].start_ns, TimeOf(900));
  EXPECT_LE(found[1].end_ns, TimeOf(912));
}

TEST(CusumDetectorTest, SingleWildSampleDoesNotAlarm) {
  std::vector<double> values = BoundedNoise(500, 0, 11);
  values[300] = 1e6;
  CusumDetector detector{CusumOptions{}};
  EXPECT_TRUE(Feed(detector, values).empty());
  // Nor did it inflate sigma: a 3-sigma shift afterwards is still found.
  std::vector<double> shifted = BoundedNoise(200, 1.8, 13);
  EXPECT_EQ(Feed(detector, shifted).size(), 1u);
}

TEST(CusumDetectorTest, FlatSignalThenStep) {
  std::vector<double> values(20'000, 3.0);
  CusumDetector detector{CusumOptions{}};
  EXPECT_TRUE(Feed(detector, values).empty());
  std::vector<double> step(1000, 4.0);
  std::vector<Detection> found = Feed(detector, step);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].start_ns, TimeOf(0));
  EXPECT_EQ(found[0].level, 4.0);
  EXPECT_EQ(found[0].baseline, 3.0);
  EXPECT_TRUE(std::isfinite(found[0].score));
}

TEST(CusumDetectorTest, FewFalseAlarmsOnGaussianNoise) {
  // In-control ARL with drift 1, h 8 is ~2e7 samples per side (Siegmund), so 100k samples
  // expect ~0.01 alarms; allow 2 for the EWMA's own estimation noise. The textbook drift 0.5,
  // h 5 would give ~200 here.
  std::mt19937_64 rng(777);
  std::normal_distribution<double> gauss(0, 1);
  std::vector<double> values(100'000);
  for (double& v : values) v = 40 + 3 * gauss(rng);
  CusumDetector detector{CusumOptions{}};
  EXPECT_LE(Feed(detector, values).size(), 2u);
}

TEST(CusumDetectorTest, DirectionSpikeIgnoresDrops) {
  std::vector<double> values = BoundedNoise(1000, 50, 12);
  for (int i = 500; i < 1000; ++i) values[i] -= 3;
  CusumOptions options;
  options.direction = detect::Direction::kSpike;
  CusumDetector detector{options};
  EXPECT_TRUE(Feed(detector, values).empty());
}

}  // namespace
}  // namespace titan
