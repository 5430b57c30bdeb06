#include "src/load/histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "src/load/rng.h"

namespace titan::load {
namespace {

constexpr double kQuantiles[] = {0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1};

// The exact order statistic the histogram approximates: the ceil(q * n)-th smallest, at least
// the first (q * n within rounding of an integer counts as that integer).
int64_t ExactQuantile(const std::vector<int64_t>& sorted, double q) {
  const double exact = q * static_cast<double>(sorted.size());
  const double nearest = std::round(exact);
  double rank =
      std::abs(exact - nearest) <= 1e-9 * std::max(1.0, exact) ? nearest : std::ceil(exact);
  rank = std::clamp(rank, 1.0, static_cast<double>(sorted.size()));
  return sorted[static_cast<size_t>(rank) - 1];
}

void ExpectQuantilesWithinError(std::vector<int64_t> values, const char* what) {
  LatencyHistogram h;
  long double sum = 0;
  for (int64_t v : values) {
    h.Record(v);
    sum += v;
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(h.count(), values.size()) << what;
  EXPECT_EQ(h.min(), values.front()) << what;
  EXPECT_EQ(h.max(), values.back()) << what;
  EXPECT_DOUBLE_EQ(h.Mean(), static_cast<double>(sum / values.size())) << what;
  for (double q : kQuantiles) {
    const int64_t want = ExactQuantile(values, q);
    const int64_t got = h.ValueAtQuantile(q);
    EXPECT_LE(std::abs(static_cast<double>(got - want)),
              static_cast<double>(want) * LatencyHistogram::kMaxRelativeError)
        << what << " q=" << q << " want " << want << " got " << got;
  }
}

TEST(LatencyHistogramTest, EmptyIsAllZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 0);
  EXPECT_EQ(h.Mean(), 0);
  EXPECT_EQ(h.ValueAtQuantile(0.5), 0);
  int buckets = 0;
  h.ForEachBucket([&](int64_t, int64_t, uint64_t) { ++buckets; });
  EXPECT_EQ(buckets, 0);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (int64_t v = 1; v <= 1000; ++v) h.Record(v);
  EXPECT_EQ(h.ValueAtQuantile(0.5), 500);
  EXPECT_EQ(h.ValueAtQuantile(0.123), 123);
  EXPECT_EQ(h.ValueAtQuantile(0.999), 999);
}

TEST(LatencyHistogramTest, RankFollowsCeilingWithoutRoundingSurprises) {
  LatencyHistogram h;
  for (int64_t v = 1; v <= 10; ++v) h.Record(v);
  EXPECT_EQ(h.ValueAtQuantile(0.1), 1);   // 0.1 * 10 is rank 1, not 2
  EXPECT_EQ(h.ValueAtQuantile(0.7), 7);   // 0.7 * 10 is rank 7, not 8
  EXPECT_EQ(h.ValueAtQuantile(0.75), 8);  // ceil(7.5)
  EXPECT_EQ(h.ValueAtQuantile(0.01), 1);
  EXPECT_EQ(h.ValueAtQuantile(-3), 1);
  EXPECT_EQ(h.ValueAtQuantile(7), 10);
  EXPECT_EQ(h.ValueAtQuantile(std::nan("")), 1);
}

TEST(LatencyHistogramTest, EveryBucketIsNarrowEnough) {
  Rng rng(7);
  for (int i = 0; i < 20000; ++i) {
    // Log-uniform over the whole range.
    const int64_t v = static_cast<int64_t>(
        std::exp(rng.Uniform() * std::log(static_cast<double>(LatencyHistogram::kMaxTrackableNs))));
    LatencyHistogram h;
    h.Record(0);
    h.Record(v);
    h.Record(LatencyHistogram::kMaxTrackableNs);
    int64_t lo = -1, hi = -1;
    h.ForEachBucket([&](int64_t l, int64_t u, uint64_t) {
      if (l <= v && v <= u) lo = l, hi = u;
    });
    ASSERT_GE(lo, 0) << v;
    EXPECT_LE(static_cast<double>(hi - lo + 1), std::max(1.0, static_cast<double>(v) / 512)) << v;
    const int64_t median = h.ValueAtQuantile(0.5);  // the middle of v's bucket
    EXPECT_LE(std::abs(static_cast<double>(median - v)),
              static_cast<double>(v) * LatencyHistogram::kMaxRelativeError)
        << v;
  }
}

TEST(LatencyHistogramTest, UniformSamplesWithinError) {
  Rng rng(1);
  std::vector<int64_t> values;
  for (int i = 0; i < 100000; ++i) values.push_back(rng.UniformInt(0, 2'000'000'000));
  ExpectQuantilesWithinError(values, "uniform");
}

TEST(LatencyHistogramTest, LognormalSamplesWithinError) {
  Rng rng(2);
  std::vector<int64_t> values;
  for (int i = 0; i < 100000; ++i) {
    values.push_back(static_cast<int64_t>(std::exp(std::log(5e6) + 2 * rng.Normal())));
  }
  ExpectQuantilesWithinError(values, "lognormal");
}

TEST(LatencyHistogramTest, BimodalSamplesWithinError) {
  Rng rng(3);
  std::vector<int64_t> values;
  for (int i = 0; i < 100000; ++i) {
    const double mode = rng.Uniform() < 0.95 ? 20e6 : 3e9;  // 20 ms, and a 3 s tail
    values.push_back(std::max<int64_t>(0, static_cast<int64_t>(mode * (1 + 0.1 * rng.Normal()))));
  }
  ExpectQuantilesWithinError(values, "bimodal");
}

TEST(LatencyHistogramTest, MergeEqualsRecordingAll) {
  Rng rng(4);
  LatencyHistogram a, b, all;
  for (int i = 0; i < 50000; ++i) {
    const int64_t v = static_cast<int64_t>(rng.Exponential() * 1e8);
    (i % 3 == 0 ? a : b).Record(v);
    all.Record(v);
  }
  a.Record(-5);  // clamped
  all.Record(-5);
  b.Record(LatencyHistogram::kMaxTrackableNs + 99);  // clamped
  all.Record(LatencyHistogram::kMaxTrackableNs + 99);
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.clamped(), 2u);
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.Mean(), all.Mean());
  for (double q : kQuantiles) EXPECT_EQ(a.ValueAtQuantile(q), all.ValueAtQuantile(q)) << q;
  std::vector<std::tuple<int64_t, int64_t, uint64_t>> ba, bb;
  a.ForEachBucket([&](int64_t l, int64_t u, uint64_t c) { ba.emplace_back(l, u, c); });
  all.ForEachBucket([&](int64_t l, int64_t u, uint64_t c) { bb.emplace_back(l, u, c); });
  EXPECT_EQ(ba, bb);
  LatencyHistogram empty;
  a.Merge(empty);
  EXPECT_EQ(a.count(), all.count());
  empty.Merge(all);
  EXPECT_EQ(empty.ValueAtQuantile(0.5), all.ValueAtQuantile(0.5));
}

TEST(LatencyHistogramTest, EdgeValues) {
  LatencyHistogram h;
  h.Record(0);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.ValueAtQuantile(0.5), 0);
  h.Record(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(h.clamped(), 1u);
  EXPECT_EQ(h.max(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(h.ValueAtQuantile(1), std::numeric_limits<int64_t>::max());
  EXPECT_DOUBLE_EQ(h.Mean(), static_cast<double>(std::numeric_limits<int64_t>::max()) / 2);
  // A quantile among clamped values reports the top bucket, below the limit.
  EXPECT_LE(h.ValueAtQuantile(0.9), LatencyHistogram::kMaxTrackableNs);
  EXPECT_GE(h.ValueAtQuantile(0.9), LatencyHistogram::kMaxTrackableNs / 513 * 512);
  h.Record(-1);
  EXPECT_EQ(h.clamped(), 2u);
  EXPECT_EQ(h.min(), 0);
}

TEST(LatencyHistogramTest, CountArgumentEqualsRepeatedRecords) {
  LatencyHistogram a, b;
  a.Record(12345, 1000);
  a.Record(7, 0);  // no-op
  for (int i = 0; i < 1000; ++i) b.Record(12345);
  EXPECT_EQ(a.count(), 1000u);
  EXPECT_EQ(a.min(), 12345);
  EXPECT_DOUBLE_EQ(a.Mean(), b.Mean());
  EXPECT_EQ(a.ValueAtQuantile(0.3), b.ValueAtQuantile(0.3));
}

TEST(LatencyHistogramTest, ClearForgetsEverything) {
  LatencyHistogram h;
  h.Record(5);
  h.Record(-5);
  h.Record(1'000'000'000);
  h.Clear();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.clamped(), 0u);
  EXPECT_EQ(h.max(), 0);
  h.Record(42);
  EXPECT_EQ(h.min(), 42);
  EXPECT_EQ(h.max(), 42);
  EXPECT_EQ(h.ValueAtQuantile(0.5), 42);
  int buckets = 0;
  h.ForEachBucket([&](int64_t, int64_t, uint64_t) { ++buckets; });
  EXPECT_EQ(buckets, 1);
}

}  // namespace
}  // namespace titan::load
