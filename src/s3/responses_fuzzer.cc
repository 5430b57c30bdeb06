// Fuzzes what titan makes of an S3 store's answers (outside input: whatever the store or a proxy
// sends): the XML parsers, a listing's guard over the continuation tokens they yield, the
// escaping of error text for the terminal, ETags and Retry-After. They must never crash, hang
// or read out of bounds; an accepted truncated listing always has a token to continue from; a
// listing that keeps answering the same pages ends; remote text never carries a control byte
// and stays bounded.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/backoff.h"
#include "src/base/listing_guard.h"
#include "src/base/text.h"
#include "src/s3/responses.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto page = titan::s3::ParseListObjectsV2(input, "fuzz");
  if (page.ok() && page->truncated && page->next_continuation_token.empty()) __builtin_trap();
  if (page.ok()) {
    // The same page answered again and again (a store that ignores the token) must end the
    // listing within max_empty_pages + 2 pages, whatever it holds.
    titan::ListingGuard guard("fuzz", {});
    int pages = 0;
    while (guard.Next(page->objects.size(), page->truncated ? page->next_continuation_token : "")
               .ok() &&
           page->truncated) {
      if (++pages > 2) __builtin_trap();
    }
  }
  auto id = titan::s3::ParseUploadId(input, "fuzz");
  if (id.ok() && id->empty()) __builtin_trap();
  auto uploads = titan::s3::ParseListMultipartUploads(input, "fuzz");
  if (uploads.ok() && uploads->truncated && uploads->next_key_marker.empty()) __builtin_trap();
  titan::s3::ErrorBody error = titan::s3::ParseError(input);
  titan::s3::IsErrorDocument(input);
  for (std::string_view words : {std::string_view(error.message), input}) {
    std::string shown = titan::RemoteText(words, 200);
    for (char c : shown) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) __builtin_trap();
    }
    if (shown.size() > 200 * 6 + 32) __builtin_trap();  // "\u202e" is 6 bytes for 3
  }
  std::string_view etag = titan::s3::UnquoteEtag(input);
  if (etag.size() > input.size()) __builtin_trap();
  titan::s3::IsMd5Etag(etag);
  auto delay = titan::ParseRetryAfter(input, 1'700'000'000'000'000'000);
  if (delay && (*delay < 0 || *delay > 86'400'000'000'000)) __builtin_trap();
  return 0;
}
