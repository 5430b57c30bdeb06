// SigV4 against the worked examples of AWS's S3 documentation ("Signature Calculations for the
// Authorization Header", examplebucket, 2013-05-24) and the canonical forms of AWS's test suite.
#include "src/s3/sigv4.h"

#include <gtest/gtest.h>

namespace titan::s3 {
namespace {

const SigningCredentials kExample{"AKIAIOSFODNN7EXAMPLE",
                                  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1"};

TEST(SigV4, GetObjectWithRangeMatchesAwsExample) {
  RequestToSign r{"GET",
                  "/test.txt",
                  {},
                  {{"Host", "examplebucket.s3.amazonaws.com"},
                   {"Range", "bytes=0-9"},
                   {"x-amz-content-sha256", std::string(kEmptySha256)},
                   {"x-amz-date", "20130524T000000Z"}},
                  std::string(kEmptySha256)};
  EXPECT_EQ(Authorization(kExample, "20130524T000000Z", r),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, ListObjectsQueryMatchesAwsExample) {
  RequestToSign r{"GET",
                  "/",
                  {{"prefix", "J"}, {"max-keys", "2"}},
                  {{"host", "examplebucket.s3.amazonaws.com"},
                   {"x-amz-content-sha256", std::string(kEmptySha256)},
                   {"x-amz-date", "20130524T000000Z"}},
                  std::string(kEmptySha256)};
  EXPECT_EQ(CanonicalQuery(r.query), "max-keys=2&prefix=J");
  EXPECT_EQ(Authorization(kExample, "20130524T000000Z", r),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date,"
            "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(SigV4, ValuelessQueryParameterSignsAsNameEquals) {
  // curl 7.88 gets this one wrong; S3 expects "uploads=".
  EXPECT_EQ(CanonicalQuery({{"uploads", ""}}), "uploads=");
  EXPECT_EQ(CanonicalQuery({{"uploadId", "a/b+c"}, {"partNumber", "10"}}),
            "partNumber=10&uploadId=a%2Fb%2Bc");
}

TEST(SigV4, CanonicalRequestEncodesPathTrimsHeaders) {
  RequestToSign r{"PUT",
                  "/bucket/step 1/ünï.data",
                  {},
                  {{"X-Amz-Date", "20150830T123600Z"}, {"My-Header", "  a   b  c "}},
                  "UNSIGNED-PAYLOAD"};
  EXPECT_EQ(CanonicalRequest(r),
            "PUT\n/bucket/step%201/%C3%BCn%C3%AF.data\n\nmy-header:a b c\n"
            "x-amz-date:20150830T123600Z\n\nmy-header;x-amz-date\nUNSIGNED-PAYLOAD");
}

TEST(SigV4, ChangingTheSecretOrTheBodyChangesTheSignature) {
  RequestToSign r{
      "PUT", "/b/k", {}, {{"host", "h"}, {"x-amz-date", "20260101T000000Z"}}, Sha256Hex("data")};
  std::string good = Authorization(kExample, "20260101T000000Z", r);
  SigningCredentials wrong = kExample;
  wrong.secret_access_key += "x";
  EXPECT_NE(Authorization(wrong, "20260101T000000Z", r), good);
  r.payload_sha256 = Sha256Hex("datA");
  EXPECT_NE(Authorization(kExample, "20260101T000000Z", r), good);
}

TEST(SigV4, Sha256AndDate) {
  EXPECT_EQ(Sha256Hex(""), kEmptySha256);
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(AmzDate(1369353600), "20130524T000000Z");
}

}  // namespace
}  // namespace titan::s3
