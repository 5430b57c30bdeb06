#include "src/s3/responses.h"

#include <gtest/gtest.h>

namespace titan::s3 {
namespace {

TEST(Responses, ListObjectsV2Page) {
  auto page = ParseListObjectsV2(
      R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>
<Prefix>ck/</Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>
<NextContinuationToken>tok&amp;1</NextContinuationToken>
<Contents><Key>ck/latest</Key><Size>16</Size></Contents>
<CommonPrefixes><Prefix>ck/step_0000000100/</Prefix></CommonPrefixes>
</ListBucketResult>)",
      "test");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "ck/latest");
  EXPECT_EQ(page->objects[0].size_bytes, 16u);
  ASSERT_EQ(page->common_prefixes.size(), 1u);
  EXPECT_EQ(page->common_prefixes[0], "ck/step_0000000100/");
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_continuation_token, "tok&1");
}

TEST(Responses, RejectsWhatIsNotAListing) {
  EXPECT_FALSE(ParseListObjectsV2("<html>proxy error</html>", "t").ok());
  EXPECT_FALSE(ParseListObjectsV2("not xml <", "t").ok());
  EXPECT_FALSE(
      ParseListObjectsV2("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents>"
                         "</ListBucketResult>",
                         "t")
          .ok());
  EXPECT_FALSE(ParseListObjectsV2(
                   "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "t")
                   .ok());
}

TEST(Responses, UploadIdAndError) {
  auto id = ParseUploadId(
      "<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>2~abc</UploadId>"
      "</InitiateMultipartUploadResult>",
      "t");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "2~abc");
  EXPECT_FALSE(ParseUploadId("<InitiateMultipartUploadResult/>", "t").ok());
  ErrorBody e = ParseError(
      "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>gone</Message></Error>");
  EXPECT_EQ(e.code, "NoSuchBucket");
  EXPECT_EQ(e.message, "gone");
  EXPECT_TRUE(IsErrorDocument("<Error><Code>InternalError</Code></Error>"));
  EXPECT_FALSE(IsErrorDocument("<CompleteMultipartUploadResult/>"));
  EXPECT_EQ(ParseError("garbage").code, "");
}

TEST(Responses, ListMultipartUploads) {
  auto page = ParseListMultipartUploads(
      "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated><NextKeyMarker>k2"
      "</NextKeyMarker><NextUploadIdMarker>2~b</NextUploadIdMarker><Upload><Key>p/k1</Key>"
      "<UploadId>2~a</UploadId></Upload></ListMultipartUploadsResult>",
      "t");
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->uploads.size(), 1u);
  EXPECT_EQ(page->uploads[0].key, "p/k1");
  EXPECT_EQ(page->uploads[0].upload_id, "2~a");
  EXPECT_EQ(page->next_key_marker, "k2");
  EXPECT_FALSE(ParseListMultipartUploads("<ListMultipartUploadsResult><Upload><Key>k</Key></Upload>"
                                         "</ListMultipartUploadsResult>",
                                         "t")
                   .ok());
  EXPECT_FALSE(ParseListMultipartUploads("<ListBucketResult/>", "t").ok());
}

TEST(Responses, CompleteBodyListsPartsInOrder) {
  EXPECT_EQ(CompleteMultipartBody({"\"a\"", "\"b\""}),
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag>"
            "</Part><Part><PartNumber>2</PartNumber><ETag>&quot;b&quot;</ETag></Part>"
            "</CompleteMultipartUpload>");
}

}  // namespace
}  // namespace titan::s3
