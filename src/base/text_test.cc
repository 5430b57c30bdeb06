#include "src/base/text.h"

#include <gtest/gtest.h>

namespace titan {
namespace {

TEST(TextTest, ParsesIntegersStrictly) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt64("-42", &v));
  EXPECT_EQ(v, -42);
  EXPECT_FALSE(ParseInt64("", &v));
  EXPECT_FALSE(ParseInt64("12x", &v));
  EXPECT_FALSE(ParseInt64("99999999999999999999", &v));
  uint64_t u = 0;
  EXPECT_TRUE(ParseUint64("18446744073709551615", &u));
  EXPECT_EQ(u, 18446744073709551615ULL);
  EXPECT_FALSE(ParseUint64("-1", &u));
}

TEST(TextTest, ParsesFiniteDoublesOnly) {
  double d = 0;
  EXPECT_TRUE(ParseDouble("0.25", &d));
  EXPECT_DOUBLE_EQ(d, 0.25);
  EXPECT_FALSE(ParseDouble("nan", &d));
  EXPECT_FALSE(ParseDouble("inf", &d));
  EXPECT_FALSE(ParseDouble("1e999", &d));
}

TEST(TextTest, SplitsLinesAndFields) {
  std::string_view rest = "cpu  1 2\tthree\nsecond line\n";
  std::string_view line = NextLine(&rest);
  EXPECT_EQ(line, "cpu  1 2\tthree");
  EXPECT_EQ(NextField(&line), "cpu");
  EXPECT_EQ(NextField(&line), "1");
  EXPECT_EQ(NextField(&line), "2");
  EXPECT_EQ(NextField(&line), "three");
  EXPECT_EQ(NextField(&line), "");
  EXPECT_EQ(NextLine(&rest), "second line");
  EXPECT_TRUE(rest.empty());
  EXPECT_EQ(Trim("  x y \n"), "x y");
}

TEST(TextTest, ExcerptCutsLongTextWithoutSplittingACharacter) {
  EXPECT_EQ(Excerpt("short"), "short");
  EXPECT_EQ(Excerpt(std::string(80, 'a')), std::string(80, 'a'));
  EXPECT_EQ(Excerpt(std::string(1'000'000, 'a')), std::string(80, 'a') + "... (1000000 bytes)");
  // "é" is two bytes: a cut inside it keeps neither byte.
  EXPECT_EQ(Excerpt("abé", 3), "ab... (4 bytes)");
}

// A remote peer's words are shown bounded and escaped (issue 37): terminal escapes, NULs,
// broken UTF-8 and bidi overrides cannot reach the terminal; real UTF-8 text passes.
TEST(TextTest, RemoteTextEscapesControlsAndBoundsLength) {
  EXPECT_EQ(RemoteText("SlowDown: please retry"), "SlowDown: please retry");
  EXPECT_EQ(RemoteText("\x1b[2J\x1b]0;pwned\x07ok"), "\\x1b[2J\\x1b]0;pwned\\x07ok");
  EXPECT_EQ(RemoteText(std::string("a\0b\nc\td", 7)), "a\\x00b\\nc\\td");
  EXPECT_EQ(RemoteText("caf\xc3\xa9 \xe5\xad\x98\xe5\x82\xa8"),
            "caf\xc3\xa9 \xe5\xad\x98\xe5\x82\xa8");
  EXPECT_EQ(RemoteText("\xff\xc3(\xed\xa0\x80"),
            "\\xff\\xc3(\\xed\\xa0\\x80");                              // invalid, surrogate
  EXPECT_EQ(RemoteText("\xc0\xaf"), "\\xc0\\xaf");                      // overlong '/'
  EXPECT_EQ(RemoteText("x\xe2\x80\xaey\xc2\x9b"), "x\\u202ey\\u009b");  // RLO, C1 CSI
  EXPECT_EQ(RemoteText(std::string(1000, 'a'), 10), "aaaaaaaaaa... (1000 bytes)");
  EXPECT_EQ(RemoteText("ab\xc3\xa9", 3), "ab... (4 bytes)");  // not cut inside a sequence
}

}  // namespace
}  // namespace titan
