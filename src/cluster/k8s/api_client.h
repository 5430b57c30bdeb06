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
// Thread safety: all methods may be called concurrently (each call uses its own curl handle).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/cluster/k8s/kubeconfig.h"

namespace titan::k8s {

inline constexpr std::string_view kJson = "application/json";
inline constexpr std::string_view kMergePatch = "application/merge-patch+json";
inline constexpr std::string_view kStrategicMergePatch = "application/strategic-merge-patch+json";

class ApiClient {
 public:
  // `stop` (may be null) aborts requests and watches in flight when set (shutdown).
  explicit ApiClient(ApiEndpoint endpoint, const std::atomic<bool>* stop = nullptr);

  // One request; returns the 2xx body (at most 64 MiB). `body` is sent for PATCH/PUT/POST
  // with `content_type`. The whole call is bounded by `timeout_ns`.
  Result<std::string> Call(std::string_view method, const std::string& path, std::string_view body,
                           std::string_view content_type, int64_t timeout_ns) const;

  // GET `path` (a ?watch=1 URL) and calls `on_line` for each complete line of the stream until
  // the server ends it (OK), `on_line` returns false (OK), the stream stalls or outlives
  // `timeout_ns` (DEADLINE_EXCEEDED), `stop` is set (CANCELLED) or an error answer.
  Status Watch(const std::string& path, int64_t timeout_ns,
               const std::function<bool(std::string_view line)>& on_line) const;

  const ApiEndpoint& endpoint() const { return endpoint_; }

 private:
  ApiEndpoint endpoint_;
  const std::atomic<bool>* stop_;
};

// The advice for an HTTP status from the API server (what the user should do next).
std::string_view AdviceFor(long http_status);

}  // namespace titan::k8s
