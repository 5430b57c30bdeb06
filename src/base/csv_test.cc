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

}  // namespace
}  // namespace titan
