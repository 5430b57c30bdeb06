// A small Kubernetes REST client over libcurl: TLS with the cluster's CA, a bearer token or a
// client certificate (ApiEndpoint), one bounded request at a time per call, and streamed watches.
//
// Errors name the API server, the method and path, the HTTP status and the API's own message
// (its Status object), and say what to do: PERMISSION_DENIED (401/403: RBAC or credentials),
// NOT_FOUND (404), FAILED_PRECONDITION (409 conflict: re-read and retry), INVALID_ARGUMENT
// (400/422: the server refused the body), UNAVAILABLE (connection refused, TLS, 429, 5xx),
// DEADLINE_EXCEEDED (the request outlived its timeout), OUT_OF_RANGE (410 Gone: a watch's
// resourceVersion is too old; list again).
//
// Bounds (docs/run.md#kubernetes): every request waits for a token of the client's rate limiter
// first (client-go's defaults: 5 requests/s, bursts of 10; watches count once, when opened);
// an answer 429 (or 503) with Retry-After is retried after the delay asked for (jittered) while
// the call's timeout allows, up to 10 times as client-go does; an error body is read to 64 KiB
// and shown bounded and escaped; a redirect names its Location. A watch has no deadline but an
// idle timeout: a stream silent that long is dropped.
//
// Thread safety: all methods may be called concurrently (each call uses its own curl handle;
// the rate limiter is shared).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "src/base/rate_limiter.h"
#include "src/base/status.h"
#include "src/cluster/k8s/kubeconfig.h"

namespace titan::k8s {

inline constexpr std::string_view kJson = "application/json";
inline constexpr std::string_view kMergePatch = "application/merge-patch+json";
inline constexpr std::string_view kStrategicMergePatch = "application/strategic-merge-patch+json";

struct ApiClientOptions {
  double requests_per_second = 5;  // 0: no limit
  int burst = 10;
  // A Retry-After longer than this (or past the call's timeout) is not waited for.
  int64_t max_retry_after_ns = 10'000'000'000;
};

class ApiClient {
 public:
  // `stop` (may be null) aborts requests, waits for the rate limiter and watches in flight when
  // set (shutdown).
  explicit ApiClient(ApiEndpoint endpoint, const std::atomic<bool>* stop = nullptr,
                     ApiClientOptions options = {});

  // One request; returns the 2xx body (at most 64 MiB). `body` is sent for PATCH/PUT/POST
  // with `content_type`. The whole call, the rate limiter's wait and Retry-After waits
  // included, is bounded by `timeout_ns` (DEADLINE_EXCEEDED).
  Result<std::string> Call(std::string_view method, const std::string& path, std::string_view body,
                           std::string_view content_type, int64_t timeout_ns) const;

  // GET `path` (a ?watch=1 URL) and calls `on_line` for each complete line of the stream until
  // the server ends it (OK), `on_line` returns false (OK), no byte arrives for
  // `idle_timeout_ns` (DEADLINE_EXCEEDED), `stop` is set (CANCELLED) or an error answer.
  Status Watch(const std::string& path, int64_t idle_timeout_ns,
               const std::function<bool(std::string_view line)>& on_line) const;

  const ApiEndpoint& endpoint() const { return endpoint_; }
  const RateLimiter& limiter() const { return *limiter_; }

 private:
  ApiEndpoint endpoint_;
  const std::atomic<bool>* stop_;
  ApiClientOptions options_;
  std::unique_ptr<RateLimiter> limiter_;
};

// The advice for an HTTP status from the API server (what the user should do next).
std::string_view AdviceFor(long http_status);

}  // namespace titan::k8s
