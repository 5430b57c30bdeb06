#include "src/collectors/frozen_counter.h"

#include <gtest/gtest.h>

namespace titan {
namespace {

constexpr int64_t kS = 1'000'000'000;
using Change = FrozenCounter::Change;

TEST(FrozenCounterTest, AnAdvancingCounterIsNeverFrozen) {
  FrozenCounter c(10 * kS);
  for (int t = 0; t < 100; ++t) EXPECT_EQ(c.Update(t * kS, t * 300.0, true), Change::kNone);
  EXPECT_FALSE(c.frozen());
}

TEST(FrozenCounterTest, ReportsOnceAfterTheBoundThenOnceWhenItMovesAgain) {
  FrozenCounter c(10 * kS);
  EXPECT_EQ(c.Update(0, 5, true), Change::kNone);
  for (int t = 1; t < 10; ++t) EXPECT_EQ(c.Update(t * kS, 5, true), Change::kNone) << t;
  EXPECT_EQ(c.Update(10 * kS, 5, true), Change::kFroze);
  EXPECT_TRUE(c.frozen());
  EXPECT_EQ(c.frozen_for_ns(12 * kS), 12 * kS);
  EXPECT_EQ(c.Update(11 * kS, 5, true), Change::kNone) << "reported once per episode";
  EXPECT_EQ(c.Update(12 * kS, 6, true), Change::kMovedAgain);
  EXPECT_FALSE(c.frozen());
  EXPECT_EQ(c.Update(13 * kS, 7, true), Change::kNone);
}

TEST(FrozenCounterTest, AnIdleSourceMayKeepItsValue) {
  FrozenCounter c(10 * kS);
  for (int t = 0; t < 100; ++t) EXPECT_EQ(c.Update(t * kS, 5, false), Change::kNone);
  // Active again: the wait starts from the first active reading.
  EXPECT_EQ(c.Update(100 * kS, 5, true), Change::kNone);
  EXPECT_EQ(c.Update(109 * kS, 5, true), Change::kNone);
  EXPECT_EQ(c.Update(110 * kS, 5, true), Change::kFroze);
}

}  // namespace
}  // namespace titan
