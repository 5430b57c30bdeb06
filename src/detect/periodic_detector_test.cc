#include "src/detect/periodic_detector.h"

#include <gtest/gtest.h>

#include "src/detect/detect_test_util.h"

namespace titan {
namespace {

using detect_test::BoundedNoise;
using detect_test::Feed;
using detect_test::TimeOf;

// Step durations in ms (one sample per step): ~100 ms steps, with stalls at `stalls`.
std::vector<double> StepDurations(size_t steps, const std::vector<int>& stalls) {
  std::vector<double> values = BoundedNoise(steps, 100, 21);
  for (int s : stalls) values[static_cast<size_t>(s)] = 400;
  return values;
}

TEST(PeriodicDetectorTest, CheckpointEveryFiftyStepsHasPeriodFifty) {
  std::vector<int> stalls;
  for (int s = 30; s < 600; s += 50) stalls.push_back(s);
  PeriodicDetector detector{PeriodicOptions{}};
  std::vector<Detection> found = Feed(detector, StepDurations(600, stalls));
  // The first two stalls only start the chain; each from the third on is reported.
  ASSERT_EQ(found.size(), stalls.size() - 2);
  for (size_t i = 0; i < found.size(); ++i) {
    EXPECT_STREQ(found[i].detector, "periodic");
    EXPECT_EQ(found[i].period, 50);
    EXPECT_EQ(found[i].start_ns, TimeOf(stalls[i + 2]));
    EXPECT_EQ(found[i].peak, 400);
    EXPECT_NEAR(found[i].baseline, 100, 0.2);
  }
}

TEST(PeriodicDetectorTest, JitteredPeriodWithinTolerance) {
  // Period 80 with +-2 steps of jitter (tolerance 0.05 * 80 = 4 steps).
  std::vector<int> stalls = {40, 121, 199, 281, 360, 441};
  PeriodicDetector detector{PeriodicOptions{}};
  std::vector<Detection> found = Feed(detector, StepDurations(500, stalls));
  ASSERT_EQ(found.size(), 4u);
  for (const Detection& d : found) EXPECT_NEAR(double(d.period), 80, 2);
}

TEST(PeriodicDetectorTest, IrregularStallsAreNotPeriodic) {
  std::vector<int> stalls = {40, 77, 158, 171, 245, 390, 402, 470};
  PeriodicDetector detector{PeriodicOptions{}};
  EXPECT_TRUE(Feed(detector, StepDurations(500, stalls)).empty());
}

TEST(PeriodicDetectorTest, MinOccurrencesDelaysTheReport) {
  std::vector<int> stalls = {30, 80, 130, 180, 230};
  PeriodicOptions options;
  options.min_occurrences = 5;
  PeriodicDetector detector{options};
  std::vector<Detection> found = Feed(detector, StepDurations(300, stalls));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].start_ns, TimeOf(230));
  EXPECT_EQ(found[0].period, 50);
}

}  // namespace
}  // namespace titan
