#include "src/detect/zscore_detector.h"

#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "src/detect/detect_test_util.h"

namespace titan {
namespace {

using detect_test::BoundedNoise;
using detect_test::Feed;
using detect_test::TimeOf;

TEST(ZscoreDetectorTest, FindsSpikeInNoiseWithStartEndPeak) {
  ZscoreDetector detector{detect::ThresholdOptions{}};
  std::vector<double> values = BoundedNoise(600, 100, 1);
  values[300] = 104;  // ~7 sigma (sigma = 0.577)
  values[301] = 106;  // the peak
  values[302] = 103;
  std::vector<Detection> found = Feed(detector, values);
  ASSERT_EQ(found.size(), 1u);
  const Detection& d = found[0];
  EXPECT_STREQ(d.detector, "zscore");
  EXPECT_STREQ(d.direction, "spike");
  EXPECT_EQ(d.start_ns, TimeOf(300));
  EXPECT_EQ(d.end_ns, TimeOf(302));
  EXPECT_EQ(d.peak, 106);
  EXPECT_EQ(d.samples, 3);
  EXPECT_NEAR(d.baseline, 100, 0.2);
  EXPECT_NEAR(d.score, 6 / (2 / std::sqrt(12.0)), 2.0);  // peak deviation / uniform sigma
  EXPECT_EQ(d.period, 0);
}

TEST(ZscoreDetectorTest, OneSampleSpikeAndFiftyMillisecondSpikeAtTenMsSampling) {
  ZscoreDetector detector{detect::ThresholdOptions{}};
  std::vector<double> values = BoundedNoise(800, 50, 2);
  values[200] = 90;                                // one sample (<= 10 ms)
  for (int i = 500; i < 505; ++i) values[i] = 10;  // 50 ms at 10 ms sampling: 5 samples
  std::vector<Detection> found = Feed(detector, values);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].start_ns, TimeOf(200));
  EXPECT_EQ(found[0].end_ns, TimeOf(200));
  EXPECT_EQ(found[0].samples, 1);
  EXPECT_EQ(found[0].peak, 90);
  EXPECT_STREQ(found[1].direction, "dip");
  EXPECT_EQ(found[1].start_ns, TimeOf(500));
  EXPECT_EQ(found[1].end_ns - found[1].start_ns, 40 * kNsPerMs);
  EXPECT_EQ(found[1].samples, 5);
  EXPECT_EQ(found[1].peak, 10);
}

TEST(ZscoreDetectorTest, TransientSamplesAreNotFoldedIntoTheBaseline) {
  detect::ThresholdOptions options;
  options.max_duration = 1000;
  ZscoreDetector detector{options};
  std::vector<double> values = BoundedNoise(1000, 20, 3);
  for (int i = 200; i < 290; ++i) values[i] = 40;  // 90 samples: most of a 100-sample window
  for (int i = 400; i < 403; ++i) values[i] = 23;  // a small spike just after
  std::vector<Detection> found = Feed(detector, values);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].samples, 90);
  EXPECT_NEAR(found[0].baseline, 20, 0.2);
  // Had the long spike been folded in, the window's mean and sigma would hide this one.
  EXPECT_EQ(found[1].start_ns, TimeOf(400));
  EXPECT_NEAR(found[1].baseline, 20, 0.2);
}

TEST(ZscoreDetectorTest, FlatSignalNeitherDividesByZeroNorFiresConstantly) {
  detect::ThresholdOptions options;
  options.max_duration = 50;
  ZscoreDetector detector{options};
  std::vector<double> values(100'000, 7.0);
  EXPECT_TRUE(Feed(detector, values).empty());
  // The stuck signal jumps to a new stuck level: one detection after max_duration samples, then
  // the window re-learns the new level and stays quiet.
  std::vector<double> more(10'000, 9.0);
  std::vector<Detection> found = Feed(detector, more);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].samples, 50);
  EXPECT_EQ(found[0].baseline, 7.0);
  EXPECT_TRUE(std::isfinite(found[0].score));
  EXPECT_GT(found[0].score, 1e6);  // 2 units against a floored sigma of ~7e-9
}

TEST(ZscoreDetectorTest, NoFalsePositivesOnGaussianNoiseAtFiveSigma) {
  // Per sample, (x - mean) / s over a 100-sample window follows sqrt(1 + 1/100) * t(99);
  // P(|t(99)| > 4.98) ~ 3e-6, so 100k samples expect ~0.3 detections. <= 5 allows for a
  // one-in-a-million bad seed while still catching a broken estimator (which fires thousands).
  detect::ThresholdOptions options;
  options.k = 5;
  ZscoreDetector detector{options};
  std::mt19937_64 rng(12345);
  std::normal_distribution<double> gauss(1000, 25);
  std::vector<double> values(100'000);
  for (double& v : values) v = gauss(rng);
  EXPECT_LE(Feed(detector, values).size(), 5u);
}

TEST(ZscoreDetectorTest, DirectionLimitsTheWatchedSide) {
  detect::ThresholdOptions options;
  options.direction = detect::Direction::kSpike;
  ZscoreDetector detector{options};
  std::vector<double> values = BoundedNoise(400, 0, 4);
  values[150] = -10;
  values[250] = 10;
  std::vector<Detection> found = Feed(detector, values);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].start_ns, TimeOf(250));
}

TEST(ZscoreDetectorTest, SideFlipReportsTheFirstTransientAndOpensTheSecond) {
  ZscoreDetector detector{detect::ThresholdOptions{}};
  std::vector<double> values = BoundedNoise(300, 0, 5);
  values[100] = 10;
  values[101] = 11;
  values[102] = -10;
  std::vector<Detection> found = Feed(detector, values);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_STREQ(found[0].direction, "spike");
  EXPECT_EQ(found[0].end_ns, TimeOf(101));
  EXPECT_STREQ(found[1].direction, "dip");
  EXPECT_EQ(found[1].start_ns, TimeOf(102));
  EXPECT_EQ(found[1].samples, 1);
}

TEST(ZscoreDetectorTest, NonFiniteAndAbsurdSamplesAreIgnored) {
  std::vector<double> values = BoundedNoise(500, 5, 6);
  values[300] = 20;
  ZscoreDetector clean{detect::ThresholdOptions{}};
  std::vector<Detection> expected = Feed(clean, values);
  ASSERT_EQ(expected.size(), 1u);

  ZscoreDetector noisy{detect::ThresholdOptions{}};
  const double junk[] = {std::numeric_limits<double>::quiet_NaN(),
                         std::numeric_limits<double>::infinity(),
                         -std::numeric_limits<double>::infinity(), 1e300};
  std::vector<Detection> found;
  for (size_t i = 0; i < values.size(); ++i) {
    Detection d;
    EXPECT_FALSE(noisy.Update(TimeOf(int64_t(i)), junk[i % 4], &d));
    if (noisy.Update(TimeOf(int64_t(i)), values[i], &d)) found.push_back(d);
  }
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].start_ns, expected[0].start_ns);
  EXPECT_EQ(found[0].baseline, expected[0].baseline);
}

TEST(ZscoreDetectorTest, NothingIsJudgedBeforeMinSamples) {
  ZscoreDetector detector{detect::ThresholdOptions{}};
  std::vector<double> values = {1, 1, 1, 1000, 1};  // 1000 arrives during warm-up
  EXPECT_TRUE(Feed(detector, values).empty());
}

}  // namespace
}  // namespace titan
