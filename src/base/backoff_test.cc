#include "src/base/backoff.h"

#include <gtest/gtest.h>

#include "src/base/clock.h"

namespace titan {
namespace {

TEST(BackoffTest, DelaysDoubleWithinHalfToWholeStepUpToTheCap) {
  Backoff backoff(100, 1000);
  const int64_t steps[] = {100, 200, 400, 800, 1000, 1000, 1000};
  for (int64_t step : steps) {
    int64_t d = backoff.Next();
    EXPECT_GE(d, step / 2);
    EXPECT_LE(d, step);
  }
  backoff.Reset();
  int64_t d = backoff.Next();
  EXPECT_GE(d, 50);
  EXPECT_LE(d, 100);
}

TEST(BackoffTest, JitterSpreadsClientsThatFailedTogether) {
  Backoff a(1'000'000'000, 1'000'000'000);
  int distinct = 0;
  int64_t first = a.Next();
  for (int i = 0; i < 20; ++i) distinct += a.Next() != first;
  EXPECT_GT(distinct, 15);
}

TEST(BackoffTest, ParsesRetryAfterSecondsAndDates) {
  const int64_t now = 1445412480LL * kNsPerSecond;  // Wed, 21 Oct 2015 07:28:00 GMT
  EXPECT_EQ(ParseRetryAfter("120", now), 120 * kNsPerSecond);
  EXPECT_EQ(ParseRetryAfter(" 0 ", now), 0);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now), 30 * kNsPerSecond);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:00:00 GMT", now), 0);  // in the past
  EXPECT_EQ(ParseRetryAfter("99999999999999999999999", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("-5", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("soon", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("1e3", now), std::nullopt);
}

TEST(BackoffTest, SleepEndsEarlyWhenStopped) {
  std::atomic<bool> stop{true};
  int64_t start = MonoNowNs();
  EXPECT_FALSE(SleepUnlessStopped(10 * kNsPerSecond, &stop));
  EXPECT_LT(MonoNowNs() - start, kNsPerSecond);
  EXPECT_TRUE(SleepUnlessStopped(1'000'000, nullptr));
}

}  // namespace
}  // namespace titan
