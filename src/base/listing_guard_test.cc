#include "src/base/listing_guard.h"

#include <gtest/gtest.h>

#include <thread>

namespace titan {
namespace {

TEST(ListingGuardTest, ALongListingWithFullPagesIsFine) {
  ListingGuard guard("LIST s3://b/p/", {});
  for (int page = 0; page < 10'000; ++page) {
    ASSERT_TRUE(guard.Next(1000, "token-" + std::to_string(page)).ok());
  }
  EXPECT_TRUE(guard.Next(3, "").ok());
  EXPECT_EQ(guard.pages(), 10'001);
}

// The S2 and S5: tokens that cycle (A, B, A) or repeat ("same") end the listing.
TEST(ListingGuardTest, ARepeatedTokenIsACycle) {
  ListingGuard guard("LIST s3://b/p/", {});
  EXPECT_TRUE(guard.Next(0, "A").ok());
  EXPECT_TRUE(guard.Next(0, "B").ok());
  Status cycle = guard.Next(0, "A");
  EXPECT_EQ(cycle.code(), StatusCode::kUnavailable);
  EXPECT_NE(cycle.message().find("LIST s3://b/p/: page 3"), std::string::npos) << cycle.ToString();
  EXPECT_NE(cycle.message().find("cycle"), std::string::npos) << cycle.ToString();

  ListingGuard same("GET https://k8s/api/v1/nodes", {});
  EXPECT_TRUE(same.Next(0, "same").ok());
  EXPECT_FALSE(same.Next(0, "same").ok());
}

TEST(ListingGuardTest, ConsecutiveEmptyPagesAreCapped) {
  ListingLimits limits;
  limits.max_empty_pages = 3;
  ListingGuard guard("LIST", limits);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(guard.Next(0, "t" + std::to_string(i)).ok());
  EXPECT_TRUE(guard.Next(5, "t3").ok());  // an entry resets the count
  for (int i = 4; i < 7; ++i) ASSERT_TRUE(guard.Next(0, "t" + std::to_string(i)).ok());
  EXPECT_EQ(guard.Next(0, "t7").code(), StatusCode::kUnavailable);
}

TEST(ListingGuardTest, TheListingHasADeadlineAndTokensABound) {
  ListingLimits limits;
  limits.deadline_ns = 20'000'000;
  limits.max_token_bytes = 16;
  ListingGuard guard("LIST", limits);
  EXPECT_EQ(guard.Next(1, std::string(17, 'x')).code(), StatusCode::kUnavailable);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(guard.CheckDeadline().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(guard.Next(1, "next").code(), StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace titan
