#include "src/base/duration.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/base/command_line.h"
#include "src/base/duration_option.h"

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
  ASSERT_TRUE(ParseDurationNs("30d", &ns));
  EXPECT_EQ(ns, 30 * 86400 * kNsPerSecond);
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
  EXPECT_EQ(FormatDurationShort(5400 * kNsPerSecond), "1.5h");
  EXPECT_EQ(FormatDurationShort(30 * 86400 * kNsPerSecond), "30.0d");
}

// Every duration flag of titan takes the one syntax, bare seconds included, and a bad value is a
// usage error (exit 2) naming the flag and the range.
TEST(DurationOptionTest, OneSyntaxForEveryFlagAndBadValuesAreUsageErrors) {
  auto parse = [](std::vector<std::string> args, int64_t* ns) {
    CLI::App app{"test"};
    AddDurationOption(app, "--wait", ns, "a wait", 0, 60 * kNsPerSecond);
    std::vector<char*> argv = {const_cast<char*>("test")};
    for (std::string& a : args) argv.push_back(a.data());
    return ParseCommandLine(app, static_cast<int>(argv.size()), argv.data());
  };
  int64_t ns = 5 * kNsPerSecond;
  EXPECT_FALSE(parse({}, &ns).has_value());
  EXPECT_EQ(ns, 5 * kNsPerSecond);  // the default stays
  EXPECT_FALSE(parse({"--wait", "250ms"}, &ns).has_value());
  EXPECT_EQ(ns, 250 * kNsPerMs);
  EXPECT_FALSE(parse({"--wait", "2.5"}, &ns).has_value());  // bare seconds, as the flags took
  EXPECT_EQ(ns, 2500 * kNsPerMs);
  EXPECT_FALSE(parse({"--wait", "0"}, &ns).has_value());
  EXPECT_EQ(ns, 0);
  EXPECT_EQ(parse({"--wait", "2m"}, &ns), 2);  // over the 60 s bound
  EXPECT_EQ(parse({"--wait", "soon"}, &ns), 2);
  EXPECT_EQ(parse({"--wait", "-1"}, &ns), 2);
  EXPECT_EQ(ns, 0);  // a refused value changes nothing
}

}  // namespace
}  // namespace titan
