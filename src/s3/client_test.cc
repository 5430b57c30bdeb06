// The S3 client against a store that misbehaves (issue 37), one case per finding of the probe:
// a listing whose tokens cycle (S2), an error body that never ends (S3), a trickling answer
// (S4), keys that would name another object, a redirect, a binary error body, throttling.
// The store is a test double (test/support/fake_s3.h) because no real store misbehaves on
// demand; correct behaviour is tested against the real Ceph RGW (test/checkpoint/test_s3.py).
// Deadlines are short here (options below); CTest's TIMEOUT (30 s) fails a client that hangs.
#include "src/s3/client.h"

#include <gtest/gtest.h>

#include <string>

#include "src/base/clock.h"
#include "src/s3/etag.h"
#include "test/support/fake_s3.h"

namespace titan::s3 {
namespace {

using testing::FakeS3;
using testing::FaultHttpServer;
using testing::HttpRequest;

class S3ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.max_attempts = 3;
    options_.first_backoff_ns = 10'000'000;
    options_.max_backoff_ns = 50'000'000;
    options_.request_timeout_ns = 2 * kNsPerSecond;
    options_.stall_timeout_ns = kNsPerSecond;
    options_.listing.deadline_ns = 5 * kNsPerSecond;
  }
  std::unique_ptr<Client> MakeClient() {
    Config config;
    config.access_key_id = "AK";
    config.secret_access_key = "SK";
    config.endpoint = store_.endpoint();
    config.credentials_source = "test";
    auto client = Client::Create(config, options_);
    EXPECT_TRUE(client.ok());
    return std::move(client).value();
  }
  void Hook(std::function<bool(const HttpRequest&, FaultHttpServer::Connection&)> hook) {
    FakeS3::Faults faults;
    faults.hook = std::move(hook);
    store_.SetFaults(faults);
  }

  FakeS3 store_;
  ClientOptions options_;
};

// S2: pages with tokens A, B, A, B, ... (all empty, all "truncated") never ended: `titan ckpt
// ls` sent 911 LISTs in 40 s. The listing now fails at the first repeated token.
TEST_F(S3ClientTest, AListingWhoseTokensCycleEndsWithAnError) {
  Hook([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.method != "GET" || r.query.count("list-type") == 0) return false;
    std::string token = r.query.count("continuation-token") ? r.query.at("continuation-token") : "";
    std::string next = token == "A" ? "B" : "A";
    c.Write(FaultHttpServer::Answer(
        200, "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>" + next +
                 "</NextContinuationToken></ListBucketResult>"));
    return true;
  });
  auto client = MakeClient();
  Result<Listing> listing = client->List("ckpt", "run/", "/");
  ASSERT_FALSE(listing.ok());
  EXPECT_EQ(listing.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(listing.status().message().find("go round in a cycle"), std::string::npos)
      << listing.status().ToString();
  EXPECT_EQ(store_.server().count("GET", "list-type"), 3u);
}

// The same for ListMultipartUploads (its markers repeated after another page: A, B, A).
TEST_F(S3ClientTest, AnUploadsListingWhoseMarkersCycleEndsWithAnError) {
  Hook([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.method != "GET" || r.query.count("uploads") == 0) return false;
    std::string marker = r.query.count("key-marker") ? r.query.at("key-marker") : "";
    std::string next = marker == "A" ? "B" : "A";
    c.Write(FaultHttpServer::Answer(
        200, "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated><NextKeyMarker>" + next +
                 "</NextKeyMarker><NextUploadIdMarker>x</NextUploadIdMarker>"
                 "</ListMultipartUploadsResult>"));
    return true;
  });
  auto client = MakeClient();
  auto uploads = client->ListMultipartUploads("ckpt", "run/");
  ASSERT_FALSE(uploads.ok());
  EXPECT_NE(uploads.status().message().find("go round in a cycle"), std::string::npos)
      << uploads.status().ToString();
  EXPECT_EQ(store_.server().count("GET", "uploads"), 3u);
}

// Empty pages with fresh tokens forever: capped (consecutive empty pages), not total pages.
TEST_F(S3ClientTest, EndlessEmptyPagesEndWithAnError) {
  Hook([n = std::make_shared<std::atomic<int>>(0)](const HttpRequest& r,
                                                   FaultHttpServer::Connection& c) {
    if (r.method != "GET" || r.query.count("list-type") == 0) return false;
    c.Write(FaultHttpServer::Answer(
        200, "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>t" +
                 std::to_string((*n)++) + "</NextContinuationToken></ListBucketResult>"));
    return true;
  });
  options_.listing.max_empty_pages = 5;
  auto client = MakeClient();
  Result<Listing> listing = client->List("ckpt", "run/", "/");
  ASSERT_FALSE(listing.ok());
  EXPECT_NE(listing.status().message().find("6 pages in a row held no entry"), std::string::npos)
      << listing.status().ToString();
}

// A large listing of full pages is fine (pages are not capped).
TEST_F(S3ClientTest, ALongListingOfFullPagesIsRead) {
  for (int i = 0; i < 250; ++i) store_.Put("ckpt", "run/f" + std::to_string(1000 + i), "x");
  FakeS3::Faults faults;
  faults.page_size = 2;
  store_.SetFaults(faults);
  options_.listing.max_empty_pages = 1;
  auto client = MakeClient();
  Result<Listing> listing = client->List("ckpt", "run/", "/");
  ASSERT_TRUE(listing.ok()) << listing.status().ToString();
  EXPECT_EQ(listing->objects.size(), 250u);
}

// S3: an error answer whose body never ends was read forever. It is read to a bound, then the
// connection is dropped, and the error is reported with the head of the body.
TEST_F(S3ClientTest, AnErrorBodyThatNeverEndsIsCutAndTheConnectionDropped) {
  Hook([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (!c.Write("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 100000000000\r\n\r\n"
                 "<Error><Code>InternalError</Code>")) {
      return true;
    }
    std::string filler(64 << 10, ' ');
    while (c.Write(filler)) {
    }
    c.Close();
    return true;
  });
  options_.request_timeout_ns = 20 * kNsPerSecond;  // the bound, not the deadline, ends it
  auto client = MakeClient();
  Status status = client->DeleteObject("ckpt", "run/x");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("HTTP 500"), std::string::npos) << status.ToString();
  EXPECT_EQ(store_.server().count("DELETE"), 3u);  // every attempt ended by the bound
}

// S4: a ranged GET trickling 2.5 bytes/s was never timed out (the stall limit was 1 byte/s):
// an 8 MiB chunk would have taken 39 days. Below the minimum speed over the stall time, an
// attempt is abandoned; the request fails when its attempts are spent (or at its deadline).
TEST_F(S3ClientTest, AnAnswerTricklingBelowTheMinimumSpeedIsAbandoned) {
  store_.Put("ckpt", "run/data", std::string(8 << 20, 'd'));
  Hook([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.method != "GET") return false;
    if (!c.Write("HTTP/1.1 206 Partial Content\r\nContent-Length: 8388608\r\n\r\n")) return true;
    c.Trickle(std::string(8 << 20, 'd'), 2.5);
    c.Close();
    return true;
  });
  auto client = MakeClient();
  std::string buffer(8 << 20, '\0');
  Status status = client->GetRange("ckpt", "run/data", 0, buffer.size(), buffer.data());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_NE(status.message().find("Operation too slow"), std::string::npos) << status.ToString();
  EXPECT_EQ(store_.server().count("GET"), 3u);  // each attempt abandoned, then given up
}

// S4's other half: headers at 16 bytes/s timed out per attempt, but 8 attempts took minutes.
// The deadline covers all attempts of a request.
TEST_F(S3ClientTest, HeadersTricklingFailWithinTheRequestsDeadline) {
  Hook([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    c.Trickle("HTTP/1.1 200 OK\r\nX-Padding: " + std::string(4096, 'p') + "\r\n", 16);
    c.Close();
    return true;
  });
  options_.max_attempts = 8;
  auto client = MakeClient();
  Result<uint64_t> size = client->HeadObject("ckpt", "run/x");
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.status().code(), StatusCode::kDeadlineExceeded) << size.status().ToString();
  EXPECT_LE(store_.server().count("HEAD"), 3u);
}

// Keys are path segments: "a/../b" would name "b" once curl or a proxy normalises the path.
TEST_F(S3ClientTest, KeysWithDotOrEmptySegmentsAreRefusedBeforeAnyRequest) {
  auto client = MakeClient();
  for (const char* key : {"run/../other", "run/./x", "run//x", "..", "run/x/"}) {
    Status status = client->PutObject("ckpt", key, "data");
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << key << ": " << status.ToString();
  }
  EXPECT_EQ(store_.server().count(), 0u);
  EXPECT_TRUE(client->PutObject("ckpt", "run/a b+c%d", "data").ok());  // escaped, kept
  EXPECT_EQ(store_.Object("ckpt", "run/a b+c%d"), "data");
}

// A listing that answers about another prefix is refused, not used.
TEST_F(S3ClientTest, AListingOutsideThePrefixIsRefused) {
  Hook([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (r.query.count("list-type") == 0) return false;
    c.Write(FaultHttpServer::Answer(
        200,
        "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>other/x</Key>"
        "<Size>1</Size></Contents></ListBucketResult>"));
    return true;
  });
  auto client = MakeClient();
  Result<Listing> listing = client->List("ckpt", "run/", "/");
  ASSERT_FALSE(listing.ok());
  EXPECT_NE(listing.status().message().find("not under the prefix 'run/'"), std::string::npos)
      << listing.status().ToString();
}

// A redirect names where it points (it said only "INTERNAL: ... HTTP 307").
TEST_F(S3ClientTest, ARedirectNamesItsLocation) {
  Hook([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    c.Write(FaultHttpServer::Answer(307, "",
                                    {{"Location", "https://ckpt.s3.eu-west-1.amazonaws.com/x"}}));
    return true;
  });
  auto client = MakeClient();
  Status status = client->CheckBucket("ckpt", "run/");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("redirecting to 'https://ckpt.s3.eu-west-1.amazonaws.com/x'"),
            std::string::npos)
      << status.ToString();
}

// A binary error body reached the terminal raw (control and escape bytes from the store).
TEST_F(S3ClientTest, ABinaryErrorBodyIsShownEscapedAndBounded) {
  Hook([](const HttpRequest& r, FaultHttpServer::Connection& c) {
    c.Write(FaultHttpServer::Answer(
        400, "\x1b]0;owned\x07\x1b[2J" + std::string(5000, '\x9b') + "\r\nend"));
    return true;
  });
  auto client = MakeClient();
  Status status = client->PutObject("ckpt", "run/x", "data");
  ASSERT_FALSE(status.ok());
  std::string message(status.message());
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_EQ(message.find('\x9b'), std::string::npos);
  EXPECT_NE(message.find("\\x1b]0;owned\\x07\\x1b[2J\\x9b"), std::string::npos) << message;
  EXPECT_LT(message.size(), 1500u);
}

// SlowDown with Retry-After: the delay is honoured, and for every request of the client.
TEST_F(S3ClientTest, SlowDownWithRetryAfterPausesTheClient) {
  auto first = std::make_shared<std::atomic<bool>>(true);
  Hook([first](const HttpRequest& r, FaultHttpServer::Connection& c) {
    if (!first->exchange(false)) return false;
    c.Write(testing::S3ErrorAnswer(503, "SlowDown", "Please reduce your request rate.")
                .insert(std::string_view("HTTP/1.1 503 Service Unavailable\r\n").size(),
                        "Retry-After: 1\r\n"));
    return true;
  });
  auto client = MakeClient();
  int64_t start = MonoNowNs();
  ASSERT_TRUE(client->PutObject("ckpt", "run/x", "data").ok());
  EXPECT_GE(MonoNowNs() - start, kNsPerSecond);  // waited what the store asked for
  EXPECT_EQ(client->stats().throttled.load(), 1u);
  std::vector<HttpRequest> requests = store_.server().requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_GE(requests[1].mono_ns - requests[0].mono_ns, kNsPerSecond);
}

// Listings and metadata requests are the control plane: rate limited.
TEST_F(S3ClientTest, MetadataRequestsAreRateLimited) {
  options_.metadata_requests_per_second = 20;
  options_.metadata_burst = 2;
  store_.Put("ckpt", "run/x", "data");
  auto client = MakeClient();
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(client->HeadObject("ckpt", "run/x").ok());
  std::vector<HttpRequest> requests = store_.server().requests();
  ASSERT_EQ(requests.size(), 6u);
  // 2 at once, then one per 50 ms: the last came at least 4 x 50 ms after the first.
  EXPECT_GE(requests[5].mono_ns - requests[0].mono_ns, 190'000'000);
  // Object data is not rate limited.
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(client->PutObject("ckpt", "run/y", "d").ok());
}

// ConfirmObject: what the store keeps must be what was sent, by size and ETag, from a HEAD.
TEST_F(S3ClientTest, ConfirmObjectChecksSizeAndEtag) {
  store_.Put("ckpt", "run/x", "data");
  auto client = MakeClient();
  EXPECT_TRUE(client->ConfirmObject("ckpt", "run/x", 4, Md5Hex("data")).ok());
  EXPECT_EQ(client->ConfirmObject("ckpt", "run/x", 5, Md5Hex("data!")).code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(client->ConfirmObject("ckpt", "run/x", 4, Md5Hex("dat!")).code(),
            StatusCode::kDataLoss);
  Status missing = client->ConfirmObject("ckpt", "run/none", 4, Md5Hex("data"));
  EXPECT_EQ(missing.code(), StatusCode::kDataLoss);
  EXPECT_NE(missing.message().find("holds no such object"), std::string::npos)
      << missing.ToString();
  EXPECT_EQ(store_.server().count("GET"), 0u);  // never a download
}

TEST_F(S3ClientTest, ConditionalCreateIsProbedOncePerBucket) {
  auto client = MakeClient();
  Result<bool> honoured = client->ConditionalCreateHonoured("ckpt", "run");
  ASSERT_TRUE(honoured.ok()) << honoured.status().ToString();
  EXPECT_TRUE(*honoured);
  EXPECT_TRUE(*client->ConditionalCreateHonoured("ckpt", "run"));
  EXPECT_EQ(store_.server().count("PUT"), 2u);
  EXPECT_TRUE(store_.Keys("ckpt").empty());  // the probe object is gone

  FakeS3::Faults ignores;
  ignores.honour_if_none_match = false;
  store_.SetFaults(ignores);
  auto other = MakeClient();
  EXPECT_FALSE(*other->ConditionalCreateHonoured("ckpt", "run"));
}

TEST(EtagTest, MultipartEtagsAreMd5OfThePartsMd5s) {
  // Two parts "a" and "b": MD5(MD5("a") || MD5("b")) + "-2", as AWS computes it.
  EXPECT_EQ(MultipartEtag({Md5("a"), Md5("b")}),
            Md5Hex(std::string(reinterpret_cast<const char*>(Md5("a").data()), 16) +
                   std::string(reinterpret_cast<const char*>(Md5("b").data()), 16)) +
                "-2");
  EXPECT_EQ(Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(UnquoteEtag("\"d41d8cd98f00b204e9800998ecf8427e\""),
            "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(UnquoteEtag("W/\"abc\""), "abc");
  EXPECT_TRUE(IsMd5Etag("d41d8cd98f00b204e9800998ecf8427e"));
  EXPECT_TRUE(IsMd5Etag("d41d8cd98f00b204e9800998ecf8427e-12"));
  EXPECT_FALSE(IsMd5Etag("d41d8cd98f00b204e9800998ecf8427e-0"));
  EXPECT_FALSE(IsMd5Etag("kms-encrypted-etag"));
}

}  // namespace
}  // namespace titan::s3
