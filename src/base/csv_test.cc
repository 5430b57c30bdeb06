#include "src/base/csv.h"

#include <gtest/gtest.h>

namespace titan {
namespace {

TEST(CsvFieldTest, QuotesOnlyWhatMustBeQuoted) {
  EXPECT_EQ(CsvField("ncclKernel_AllReduce"), "ncclKernel_AllReduce");
  EXPECT_EQ(CsvField("a,b"), "\"a,b\"");
  EXPECT_EQ(CsvField("x{gpu=\"0\"}"), "\"x{gpu=\"\"0\"\"}\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField(""), "");
}

TEST(SplitCsvRecordTest, SplitsPlainAndQuotedFields) {
  std::vector<std::string> f;
  ASSERT_TRUE(SplitCsvRecord("a,,\"b,\"\"c\"\"\",d\r", &f));
  EXPECT_EQ(f, (std::vector<std::string>{"a", "", "b,\"c\"", "d"}));
  ASSERT_TRUE(SplitCsvRecord("", &f));
  EXPECT_EQ(f, (std::vector<std::string>{""}));
  ASSERT_TRUE(SplitCsvRecord("x,", &f));
  EXPECT_EQ(f, (std::vector<std::string>{"x", ""}));
  EXPECT_FALSE(SplitCsvRecord("\"open", &f));
  EXPECT_FALSE(SplitCsvRecord("\"a\"b,c", &f));
}

}  // namespace
}  // namespace titan
