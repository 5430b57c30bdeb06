// EtcdClient: the few etcd v3 calls `titan run` needs, over the JSON gateway (POST /v3/...) with
// libcurl. Works with etcd 3.4 (Debian bookworm's etcd-server) and later.
//
// Every call has a timeout (the constructor's), so an unreachable or stalled etcd is an
// UNAVAILABLE / DEADLINE_EXCEEDED error naming the endpoint, never a hang. Calls wait for a
// token of the client's rate limiter first (kRequestsPerSecond, bursts of kBurst: titan run
// polls etcd, and a thousand nodes polling without a bound are a storm), except KeepAlive,
// which must never be held past its lease's TTL. etcd's error text is shown bounded and
// escaped.
// Thread safety: not thread-safe (one curl handle); use one client per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/rate_limiter.h"
#include "src/base/status.h"
#include "src/supervisor/etcd_json.h"

namespace titan::supervisor {

class EtcdClient {
 public:
  // titan run's steady load is about 15 requests/s per node (its 200 ms poll); a rendezvous
  // polls faster and is slowed to this rate.
  static constexpr double kRequestsPerSecond = 25;
  static constexpr int kBurst = 50;

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
  // Refreshes the lease; NOT_FOUND if it already expired. Not rate limited; `timeout_ms` > 0
  // bounds this call instead of the constructor's timeout (the time left of the lease's TTL).
  Status KeepAlive(int64_t lease, int64_t timeout_ms = 0);
  Status RevokeLease(int64_t lease);

 private:
  // `timeout_ms` 0: the constructor's; `limited`: waits for the rate limiter first.
  Result<std::string> Post(std::string_view path, const std::string& body, int64_t timeout_ms = 0,
                           bool limited = true);
  std::string endpoint_;
  int64_t timeout_ms_;
  RateLimiter limiter_{kRequestsPerSecond, kBurst};
  void* curl_ = nullptr;
};

}  // namespace titan::supervisor
