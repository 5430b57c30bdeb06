// Fuzzes the parsers of S3's XML answers (outside input: whatever the store or a proxy sends).
// They must never crash, hang or read out of bounds; an accepted truncated listing always has a
// token to continue from.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/s3/responses.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto page = titan::s3::ParseListObjectsV2(input, "fuzz");
  if (page.ok() && page->truncated && page->next_continuation_token.empty()) __builtin_trap();
  auto id = titan::s3::ParseUploadId(input, "fuzz");
  if (id.ok() && id->empty()) __builtin_trap();
  auto uploads = titan::s3::ParseListMultipartUploads(input, "fuzz");
  if (uploads.ok() && uploads->truncated && uploads->next_key_marker.empty()) __builtin_trap();
  titan::s3::ParseError(input);
  titan::s3::IsErrorDocument(input);
  return 0;
}
