// Fuzzes the etcd JSON-gateway response parsers and base64 (bytes from the network).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/supervisor/etcd_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  using namespace titan::supervisor;
  (void)ParseRangeResponse(body);
  (void)ParseLeaseGrantResponse(body);
  (void)ParseLeaseKeepAliveResponse(body);
  (void)ParseTxnResponse(body);
  (void)ParseErrorMessage(body);
  auto d = Base64Decode(body);
  if (d.ok() && Base64Encode(*d) != body) __builtin_trap();  // canonical input round-trips
  return 0;
}
