// Encoding and parsing of etcd v3 JSON-gateway messages (etcd 3.4 serves the gateway at /v3/).
// Keys and values travel base64-encoded; 64-bit integers travel as JSON strings. The parsers
// take untrusted bytes (whatever answered on the etcd port) and never throw or crash; errors say
// which field was wrong. Fuzzed by etcd_json_fuzzer.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan::supervisor {

std::string Base64Encode(std::string_view bytes);
// Rejects characters outside the standard alphabet and bad padding.
Result<std::string> Base64Decode(std::string_view text);

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

// The key one past every key with this prefix (etcd's range_end for a prefix scan).
std::string PrefixRangeEnd(std::string_view prefix);

// {"header":{...},"kvs":[{"key":b64,"value":b64,...}],"count":"N"}; no "kvs": empty.
Result<std::vector<EtcdKeyValue>> ParseRangeResponse(std::string_view body);
// {"ID":"123","TTL":"5"} -> the lease id.
Result<int64_t> ParseLeaseGrantResponse(std::string_view body);
// {"result":{"ID":"123","TTL":"5"}} -> the TTL left; 0 or missing TTL: the lease is gone.
Result<int64_t> ParseLeaseKeepAliveResponse(std::string_view body);
// {"succeeded":true,...} -> succeeded (absent: false, as the gateway omits false values).
Result<bool> ParseTxnResponse(std::string_view body);
// An error body {"error":"...","code":N,"message":"..."}: the message, or "" if none.
std::string ParseErrorMessage(std::string_view body);

}  // namespace titan::supervisor
