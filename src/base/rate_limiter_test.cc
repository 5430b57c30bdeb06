#include "src/base/rate_limiter.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "src/base/clock.h"

namespace titan {
namespace {

// Counts tokens, not time: the burst goes without waiting, the rest wait for the refill.
TEST(RateLimiterTest, ABurstGoesAtOnceThenTheRateHolds) {
  RateLimiter limiter(50, 10);  // 20 ms per token after the burst
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(limiter.Acquire());
  EXPECT_EQ(limiter.waited_ns(), 0);
  int64_t start = MonoNowNs();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(limiter.Acquire());
  // Five more tokens need ~100 ms of refill (a lower bound: sleeping never ends early).
  EXPECT_GE(MonoNowNs() - start, 90 * kNsPerMs);
  EXPECT_GE(limiter.waited_ns(), 90 * kNsPerMs);
}

TEST(RateLimiterTest, RefusesAWaitPastTheDeadlineWithoutTakingAToken) {
  RateLimiter limiter(1, 1);
  ASSERT_TRUE(limiter.Acquire());
  EXPECT_FALSE(limiter.Acquire(MonoNowNs() + 10 * kNsPerMs));  // next token in ~1 s
  std::atomic<bool> stop{true};
  EXPECT_FALSE(limiter.Acquire(MonoNowNs() + 10 * kNsPerSecond, &stop));
}

TEST(RateLimiterTest, UnlimitedNeverWaits) {
  RateLimiter limiter(0, 1);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(limiter.Acquire(0));
}

TEST(RateLimiterTest, ThreadsShareOneBucket) {
  RateLimiter limiter(100, 4);
  std::vector<std::thread> threads;
  int64_t start = MonoNowNs();
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 6; ++i) EXPECT_TRUE(limiter.Acquire());
    });
  }
  for (std::thread& t : threads) t.join();
  // 24 tokens, 4 of them the burst: 20 refills at 10 ms.
  EXPECT_GE(MonoNowNs() - start, 190 * kNsPerMs);
}

TEST(RetryBudgetTest, RetriesAreBoundedByTheRequestsAndTheFloor) {
  RetryBudget budget(0.2, 1, 10 * kNsPerSecond);  // floor: 10 retries per window
  int granted = 0;
  while (budget.TryRetry()) ++granted;
  EXPECT_EQ(granted, 10);
  for (int i = 0; i < 100; ++i) budget.OnRequest();  // 20 more
  granted = 0;
  while (budget.TryRetry()) ++granted;
  EXPECT_EQ(granted, 20);
}

TEST(RetryBudgetTest, TheWindowSlides) {
  RetryBudget budget(0, 100, 100 * kNsPerMs);  // 10 retries per 100 ms
  int granted = 0;
  while (budget.TryRetry()) ++granted;
  EXPECT_EQ(granted, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  EXPECT_TRUE(budget.TryRetry());
}

}  // namespace
}  // namespace titan
