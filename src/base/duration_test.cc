#include "src/base/duration.h"

#include <gtest/gtest.h>

#include "src/base/clock.h"

namespace titan {
namespace {

TEST(DurationTest, ParsesUnits) {
  int64_t ns = 0;
  ASSERT_TRUE(ParseDurationNs("100ms", &ns));
  EXPECT_EQ(ns, 100 * kNsPerMs);
  ASSERT_TRUE(ParseDurationNs("2m", &ns));
  EXPECT_EQ(ns, 120 * kNsPerSecond);
  ASSERT_TRUE(ParseDurationNs("15", &ns));
  EXPECT_EQ(ns, 15 * kNsPerSecond);
  ASSERT_TRUE(ParseDurationNs("2.5s", &ns));
  EXPECT_EQ(ns, 2500 * kNsPerMs);
  ASSERT_TRUE(ParseDurationNs("50us", &ns));
  EXPECT_EQ(ns, 50 * kNsPerUs);
  EXPECT_FALSE(ParseDurationNs("-1s", &ns));
  EXPECT_FALSE(ParseDurationNs("0", &ns));
  EXPECT_FALSE(ParseDurationNs("fast", &ns));
  EXPECT_FALSE(ParseDurationNs("1e300h", &ns));
  EXPECT_FALSE(ParseDurationNs("nan", &ns));
  EXPECT_FALSE(ParseDurationNs("s", &ns));
}

TEST(DurationTest, ZeroIsAllowedWhereAsked) {
  int64_t ns = 7;
  ASSERT_TRUE(ParseDurationOrZeroNs("0ms", &ns));
  EXPECT_EQ(ns, 0);
  EXPECT_FALSE(ParseDurationOrZeroNs("-0.5s", &ns));
}

TEST(DurationTest, FormatsReadably) {
  EXPECT_EQ(FormatDuration(250 * kNsPerMs), "250ms");
  EXPECT_EQ(FormatDuration(1500 * kNsPerMs), "1500ms");
  EXPECT_EQ(FormatDuration(2 * 60 * kNsPerSecond), "2m");
  EXPECT_EQ(FormatDuration(800 * kNsPerUs), "800us");
  EXPECT_EQ(FormatDuration(0), "0s");
  int64_t back = 0;
  ASSERT_TRUE(ParseDurationNs(FormatDuration(123456789), &back));
  EXPECT_EQ(back, 123456789);
}

TEST(DurationTest, ShortFormIsRounded) {
  EXPECT_EQ(FormatDurationShort(14736140), "14.7ms");
  EXPECT_EQ(FormatDurationShort(850'400), "850us");
  EXPECT_EQ(FormatDurationShort(14'200'000'000), "14.2s");
  EXPECT_EQ(FormatDurationShort(0), "0");
}

}  // namespace
}  // namespace titan
