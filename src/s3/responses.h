// Parsers of the XML bodies S3 answers with (outside input: fuzzed by s3_responses_fuzzer).
// Each returns INVALID_ARGUMENT naming `what` when the body is not the expected document.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan::s3 {

struct ObjectEntry {
  std::string key;
  uint64_t size_bytes = 0;
};

// One page of ListObjectsV2.
struct ListPage {
  std::vector<ObjectEntry> objects;
  std::vector<std::string> common_prefixes;  // with their trailing delimiter
  bool truncated = false;
  std::string next_continuation_token;
};
Result<ListPage> ParseListObjectsV2(std::string_view body, std::string_view what);

// The UploadId of an InitiateMultipartUploadResult.
Result<std::string> ParseUploadId(std::string_view body, std::string_view what);

// An S3 <Error> document; fields are "" when absent or when the body is not one.
struct ErrorBody {
  std::string code;     // "NoSuchBucket", "SignatureDoesNotMatch", "SlowDown", ...
  std::string message;  // the server's words
};
ErrorBody ParseError(std::string_view body);

// A CompleteMultipartUpload can answer 200 with an <Error> body: true when `body` is one.
bool IsErrorDocument(std::string_view body);

// One page of ListMultipartUploads.
struct UploadsPage {
  struct Upload {
    std::string key;
    std::string upload_id;
  };
  std::vector<Upload> uploads;
  bool truncated = false;
  std::string next_key_marker;
  std::string next_upload_id_marker;
};
Result<UploadsPage> ParseListMultipartUploads(std::string_view body, std::string_view what);

// An ETag header's value without its quotes (and without a weak "W/" prefix): "\"abc\"" ->
// "abc". Anything else is returned as it came.
std::string_view UnquoteEtag(std::string_view etag);

// True for "32 hex digits" or "32 hex digits-N" (N in 1..10000): an ETag a store computed from
// MD5s (etag.h), which titan can compare with the MD5s of the bytes it sent.
bool IsMd5Etag(std::string_view unquoted);

// The request body of CompleteMultipartUpload for parts 1..n with these ETags.
std::string CompleteMultipartBody(const std::vector<std::string>& etags);

}  // namespace titan::s3
