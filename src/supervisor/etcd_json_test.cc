#include "src/supervisor/etcd_json.h"

#include <gtest/gtest.h>

namespace titan::supervisor {
namespace {

TEST(Base64, RoundTripsAllLengthsAndRejectsGarbage) {
  std::string s;
  for (int i = 0; i < 40; ++i) {
    auto d = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, s);
    s += static_cast<char>(i * 37);
  }
  EXPECT_EQ(Base64Encode("/titan/job/gen"), "L3RpdGFuL2pvYi9nZW4=");
  EXPECT_FALSE(Base64Decode("abc").ok());
  EXPECT_FALSE(Base64Decode("ab!d").ok());
  EXPECT_FALSE(Base64Decode("a=bc").ok());
}

TEST(PrefixRangeEnd, IncrementsTheLastByte) {
  EXPECT_EQ(PrefixRangeEnd("/a/"), "/a0");
  EXPECT_EQ(PrefixRangeEnd(std::string("a\xff", 2)), "b");
}

TEST(ParseRangeResponse, ReadsKvsWithStringIntegers) {
  std::string body =
      R"({"header":{"revision":"7"},"kvs":[{"key":"L2E=","value":"MQ==","create_revision":"5",)"
      R"("mod_revision":"6","version":"2","lease":"694d77aa"}],"count":"1"})";
  auto r = ParseRangeResponse(body);
  EXPECT_FALSE(r.ok());  // lease is not a decimal integer
  body = R"({"header":{"revision":"7"},"kvs":[{"key":"L2E=","value":"MQ==","create_revision":"5",)"
         R"("mod_revision":"6","lease":"7587"}],"count":"1"})";
  r = ParseRangeResponse(body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].key, "/a");
  EXPECT_EQ((*r)[0].value, "1");
  EXPECT_EQ((*r)[0].create_revision, 5);
  EXPECT_EQ((*r)[0].lease, 7587);
  auto empty = ParseRangeResponse(R"({"header":{"revision":"7"}})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_FALSE(ParseRangeResponse("not json").ok());
  EXPECT_FALSE(ParseRangeResponse(R"({"kvs":{}})").ok());
  EXPECT_FALSE(ParseRangeResponse(R"({"kvs":[{"key":"!!!!"}]})").ok());
}

TEST(ParseLease, GrantKeepAliveAndExpiry) {
  auto id = ParseLeaseGrantResponse(R"({"header":{},"ID":"7587866","TTL":"5"})");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 7587866);
  EXPECT_FALSE(ParseLeaseGrantResponse(R"({"error":"etcdserver: too many requests"})").ok());
  auto ttl = ParseLeaseKeepAliveResponse(R"({"result":{"header":{},"ID":"1","TTL":"5"}})");
  ASSERT_TRUE(ttl.ok());
  EXPECT_EQ(*ttl, 5);
  auto gone = ParseLeaseKeepAliveResponse(R"({"result":{"header":{},"ID":"1"}})");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(*gone, 0);
}

TEST(ParseTxn, SucceededOrOmitted) {
  EXPECT_TRUE(ParseTxnResponse(R"({"header":{},"succeeded":true})").value());
  EXPECT_FALSE(ParseTxnResponse(R"({"header":{}})").value());
  EXPECT_FALSE(ParseTxnResponse(R"({"error":"x","code":3,"message":"bad"})").ok());
  EXPECT_EQ(ParseErrorMessage(R"({"error":"x","code":3,"message":"bad"})"), "bad");
}

}  // namespace
}  // namespace titan::supervisor
