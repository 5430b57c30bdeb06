// EtcdClient: the few etcd v3 calls `titan run` needs, over the JSON gateway (POST /v3/...) with
// libcurl. Works with etcd 3.4 (Debian bookworm's etcd-server) and later.
//
// Every call has a timeout (the constructor's), so an unreachable or stalled etcd is an
// UNAVAILABLE / DEADLINE_EXCEEDED error naming the endpoint, never a hang.
// Thread safety: not thread-safe (one curl handle); use one client per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/supervisor/etcd_json.h"

namespace titan::supervisor {

class EtcdClient {
 public:
  // endpoint: "http://127.0.0.1:2379" (a bare "host:port" gets "http://").
  EtcdClient(std::string endpoint, int64_t timeout_ms);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  const std::string& endpoint() const { return endpoint_; }

  Status Put(std::string_view key, std::string_view value, int64_t lease = 0);
  // Keys with this prefix, in key order.
  Result<std::vector<EtcdKeyValue>> GetPrefix(std::string_view prefix);
  // The value of one key; NOT_FOUND if absent.
  Result<EtcdKeyValue> Get(std::string_view key);
  Status Delete(std::string_view key);
  // Creates key = value only if the key does not exist; true if this call created it.
  Result<bool> CreateIfAbsent(std::string_view key, std::string_view value, int64_t lease = 0);
  // Sets key = value only if its current value is `expected`; true if swapped.
  Result<bool> CompareAndSwap(std::string_view key, std::string_view expected,
                              std::string_view value);
  Result<int64_t> GrantLease(int64_t ttl_seconds);
  // Refreshes the lease; NOT_FOUND if it already expired.
  Status KeepAlive(int64_t lease);
  Status RevokeLease(int64_t lease);

 private:
  Result<std::string> Post(std::string_view path, const std::string& body);
  std::string endpoint_;
  int64_t timeout_ms_;
  void* curl_ = nullptr;
};

}  // namespace titan::supervisor
