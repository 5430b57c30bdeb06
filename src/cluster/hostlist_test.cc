#include "src/cluster/hostlist.h"

#include <gtest/gtest.h>

namespace titan::cluster {
namespace {

using Hosts = std::vector<std::string>;

Hosts Expand(std::string_view text) {
  auto r = ExpandHostlist(text);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Hosts{};
}

TEST(HostlistTest, ExpandsRangesListsAndPlainNames) {
  EXPECT_EQ(Expand("n1"), (Hosts{"n1"}));
  EXPECT_EQ(Expand("n[1-3]"), (Hosts{"n1", "n2", "n3"}));
  EXPECT_EQ(Expand("n[1-3,7],login1"), (Hosts{"n1", "n2", "n3", "n7", "login1"}));
  EXPECT_EQ(Expand("gpu-[001-003]-ib"), (Hosts{"gpu-001-ib", "gpu-002-ib", "gpu-003-ib"}));
}

TEST(HostlistTest, KeepsTheZeroPaddingOfTheLowBound) {
  EXPECT_EQ(Expand("n[08-11]"), (Hosts{"n08", "n09", "n10", "n11"}));
  EXPECT_EQ(Expand("n[8-11]"), (Hosts{"n8", "n9", "n10", "n11"}));
}

TEST(HostlistTest, SeveralGroupsInOneNameAreTheirProductLeftSlowest) {
  EXPECT_EQ(Expand("r[1-2]-n[1-2]"), (Hosts{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));
}

TEST(HostlistTest, MalformedListsNameWhatAndWhere) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"n[1-3", "an unclosed '[' at byte 1"},
      {"n1]", "a ']' without its '[' at byte 2"},
      {"n[3-1]", "ends before it starts"},
      {"n[a-b]", "is not a number"},
      {"n[]", "an empty bracket group"},
      {"n1,,n2", "an empty name at byte 3"},
      {"n[1[2]]", "a nested '['"},
      {"n 1", "a blank or control character at byte 1"},
      {"n[1-1234567890123456789]", "is not a number"},
  };
  for (const Case& c : cases) {
    auto r = ExpandHostlist(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.text << ": " << r.status().message();
  }
}

TEST(HostlistTest, TheBoundHoldsBeforeAnythingIsBuilt) {
  // 10^18 names would exhaust memory if built: refused by count first.
  auto huge = ExpandHostlist("n[0-999999999999999999]", 1000);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("more than 1000 names"), std::string::npos);
  auto product = ExpandHostlist("a[1-100]b[1-100]", 1000);
  ASSERT_FALSE(product.ok());
  auto many = ExpandHostlist("a[1-600],b[1-600]", 1000);
  ASSERT_FALSE(many.ok());
  EXPECT_TRUE(ExpandHostlist("a[1-500],b[1-500]", 1000).ok());
  // Plain names after the bound is reached (found by hostlist_fuzzer: 4100 names for 4096).
  auto plain_after = ExpandHostlist("a[1-500],b[1-500],c", 1000);
  ASSERT_FALSE(plain_after.ok());
  EXPECT_NE(plain_after.status().message().find("more than 1000 names"), std::string::npos);
  EXPECT_FALSE(ExpandHostlist("a,b,c", 2).ok());
}

}  // namespace
}  // namespace titan::cluster
