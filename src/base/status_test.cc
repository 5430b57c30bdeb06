#include "src/base/status.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace titan {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  TITAN_ASSIGN_OR_RETURN(int half, Half(x));
  TITAN_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckEven(int x) {
  TITAN_RETURN_IF_ERROR_CTX(Half(x).status(), "checking " + std::to_string(x));
  return OkStatus();
}

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_EQ(s.code(), StatusCode::kOk);
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = DataLossError("chunk 3 of a.bin: checksum mismatch");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.ToString(), "DATA_LOSS: chunk 3 of a.bin: checksum mismatch");
}

TEST(StatusTest, AssignOrReturnPropagates) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "odd: 3");
}

TEST(StatusTest, ContextIsPrepended) {
  Status s = CheckEven(5);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "checking 5: odd: 5");
  EXPECT_TRUE(CheckEven(4).ok());
}

TEST(StatusTest, ErrnoMapsToSpecificCodes) {
  EXPECT_EQ(ErrnoError(ENOENT, "open x").code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError(ENOSPC, "write x").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoError(EADDRINUSE, "bind").code(), StatusCode::kAlreadyExists);
  EXPECT_NE(ErrnoError(ENOENT, "open x").message().find("open x: "), std::string_view::npos);
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  Result<int> r = InvalidArgumentError("bad");
  EXPECT_DEATH((void)r.value(), "value\\(\\) on error Result");
}

}  // namespace
}  // namespace titan
