#include "src/base/json_depth.h"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace titan {
namespace {

using ::testing::HasSubstr;

TEST(CheckJsonDepthTest, RefusesDeepNestingAndNamesWhere) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Status s = CheckJsonDepth(deep, "MANIFEST");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("MANIFEST"));
  EXPECT_THAT(s.message(), HasSubstr("deeper than 128 levels at byte 128"));
  EXPECT_TRUE(CheckJsonDepth(std::string(128, '[') + std::string(128, ']'), "x").ok());
  EXPECT_FALSE(CheckJsonDepth(std::string(129, '{'), "x").ok());
}

TEST(CheckJsonDepthTest, BracketsInsideStringsDoNotCount) {
  const std::string text = R"({"a": "[[[[[[[[[[\"[[[[[[[[[[[[", "b": [1, {"c": "}}}}]]]]"}]})";
  EXPECT_TRUE(CheckJsonDepth(text, "x", 3).ok());
  EXPECT_FALSE(CheckJsonDepth(text, "x", 2).ok());
}

}  // namespace
}  // namespace titan
