// Fuzzes the manifest reader (outside input: a MANIFEST or rank_done file on shared storage).
// ParseManifest must never crash, hang or read out of bounds; whatever it accepts must survive
// a serialize/parse round trip.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <xxhash.h>

#include <cstdio>
#include <string>

#include "src/checkpoint/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = titan::checkpoint::ParseManifest(input, "fuzz");
  if (parsed.ok()) {
    std::string again = titan::checkpoint::SerializeManifest(*parsed);
    auto reparsed = titan::checkpoint::ParseManifest(again, "fuzz");
    if (!reparsed.ok()) __builtin_trap();
  }
  // The envelope checksum rejects nearly every mutation, so also parse the input as a body
  // behind a valid envelope: that reaches the JSON and semantic validation.
  char header[96];
  std::snprintf(header, sizeof header, "titan-checkpoint v1 xxh3-64=%016llx bytes=%zu\n",
                static_cast<unsigned long long>(XXH3_64bits(data, size)), size);
  std::string wrapped = std::string(header) + std::string(input);
  auto body = titan::checkpoint::ParseManifest(wrapped, "fuzz");
  if (body.ok()) {
    auto reparsed =
        titan::checkpoint::ParseManifest(titan::checkpoint::SerializeManifest(*body), "fuzz");
    if (!reparsed.ok()) __builtin_trap();
  }
  return 0;
}
