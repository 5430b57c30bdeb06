#include "src/detect/mad_detector.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

#include <gtest/gtest.h>

#include "src/detect/detect_test_util.h"
#include "src/detect/sorted_window.h"

namespace titan {
namespace {

using detect_test::BoundedNoise;
using detect_test::Feed;
using detect_test::TimeOf;

double BruteMedian(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

TEST(SortedWindowTest, MedianAndMadMatchBruteForce) {
  for (int64_t capacity : {3, 4, 7, 64, 129, 300}) {  // counting and binary-search paths
    detect::SortedWindow window(capacity);
    std::deque<double> kept;
    std::mt19937_64 rng(static_cast<uint64_t>(capacity));
    std::uniform_int_distribution<int> small(0, 9);  // many duplicates
    std::normal_distribution<double> wide(0, 100);
    for (int i = 0; i < 3000; ++i) {
      const double value = i % 3 == 0 ? wide(rng) : small(rng);
      window.Add(value);
      kept.push_back(value);
      if (static_cast<int64_t>(kept.size()) > capacity) kept.pop_front();
      std::vector<double> values(kept.begin(), kept.end());
      const double median = BruteMedian(values);
      std::vector<double> deviations;
      for (double v : values) deviations.push_back(std::fabs(v - median));
      ASSERT_EQ(window.size(), static_cast<int64_t>(kept.size()));
      ASSERT_EQ(window.Median(), median) << "capacity " << capacity << " step " << i;
      ASSERT_DOUBLE_EQ(window.Mad(median), BruteMedian(deviations))
          << "capacity " << capacity << " step " << i;
    }
  }
}

TEST(MadDetectorTest, FindsSpikeDespiteOutliersInTheWindow) {
  detect::ThresholdOptions options;
  options.window = 64;
  options.k = 3.5;
  MadDetector detector{options};
  std::vector<double> values = BoundedNoise(400, 100, 7);
  values[300] = 104;
  values[301] = 105;
  std::vector<Detection> found = Feed(detector, values);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_STREQ(found[0].detector, "mad");
  EXPECT_EQ(found[0].start_ns, TimeOf(300));
  EXPECT_EQ(found[0].end_ns, TimeOf(301));
  EXPECT_EQ(found[0].peak, 105);
  EXPECT_NEAR(found[0].baseline, 100, 0.3);
}

TEST(MadDetectorTest, QuantisedFlatSignalOnlyFiresOnARealChange) {
  detect::ThresholdOptions options;
  options.window = 64;
  options.k = 3.5;
  MadDetector detector{options};
  std::vector<double> values(50'000, 100.0);  // e.g. GPU utilisation pinned at 100 %
  EXPECT_TRUE(Feed(detector, values).empty());
  std::vector<double> dip(100, 100.0);
  dip[10] = dip[11] = 95;
  std::vector<Detection> found = Feed(detector, dip);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_STREQ(found[0].direction, "dip");
  EXPECT_EQ(found[0].samples, 2);
  EXPECT_EQ(found[0].baseline, 100);
  EXPECT_TRUE(std::isfinite(found[0].score));
}

TEST(MadDetectorTest, RepeatedGrossOutliersAreEachReportedAndLeaveTheBaselineAlone) {
  detect::ThresholdOptions options;
  options.window = 64;
  options.k = 3.5;
  MadDetector detector{options};
  std::vector<double> values = BoundedNoise(1000, 0, 9);
  int outliers = 0;
  for (size_t i = 100; i < values.size(); i += 10, ++outliers) values[i] = 1000;
  std::vector<Detection> found = Feed(detector, values);
  ASSERT_EQ(static_cast<int>(found.size()), outliers);
  for (size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i].start_ns, TimeOf(100 + 10 * int64_t(i)));
    EXPECT_EQ(found[i].samples, 1);
    EXPECT_EQ(found[i].peak, 1000);
    EXPECT_NEAR(found[i].baseline, 0, 0.3);
  }
}

}  // namespace
}  // namespace titan
