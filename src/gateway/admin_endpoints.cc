// The gateway's routing of what it serves: its own endpoints (GET /healthz, /metrics,
// /admin/replicas), the inspected API paths and the paths it relays as they are
// (gateway_impl.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/gateway/gateway_impl.h"
#include "src/metrics/exposition.h"

namespace titan::gateway {

awaitable<void> Gateway::Impl::RespondMethodNotAllowed(http::Exchange& ex, std::string_view path,
                                                       std::string_view allowed) {
  std::string text =
      http::JsonError(fmt::format("{} takes {}", path, allowed), "invalid_request_error", 405);
  const http::Headers allow = {{"Allow", std::string(allowed)}};
  co_await ex.Respond(405, "application/json", std::move(text), allow);
}

awaitable<void> Gateway::Impl::Handle(http::Exchange& ex) {
  const ScopedCount count(handlers);
  co_await Route(ex);
}

awaitable<void> Gateway::Impl::Route(http::Exchange& ex) {
  const http::Request& req = ex.request();
  const std::string_view path = req.path();
  if ((path == "/healthz" || path == "/metrics" || path == "/admin/replicas") &&
      req.method != "GET" && req.method != "HEAD") {
    co_await RespondMethodNotAllowed(ex, path, "GET");  // DELETE /admin/replicas was a 200
    co_return;
  }
  if (path == "/healthz") {
    int ready = 0;
    for (const auto& r : replicas) ready += !r->removed && r->health.Routable();
    const int status = draining || ready == 0 ? 503 : 200;
    nlohmann::json body = {{"status", draining ? "draining"
                                      : ready  ? "ok"
                                               : "no_replica"},
                           {"ready_replicas", ready},
                           {"replicas", replicas.size()}};
    std::string text = body.dump();
    co_await ex.Respond(status, "application/json", std::move(text));
    co_return;
  }
  if (path == "/metrics") {
    const std::string_view accept = http::FindHeader(req.headers, "Accept");
    std::string text = telemetry.RenderMetrics(accept);
    const std::string_view content_type = ContentType(NegotiateFormat(accept));
    co_await ex.Respond(200, content_type, std::move(text));
    co_return;
  }
  if (path == "/admin/replicas") {
    nlohmann::json list = nlohmann::json::array();
    for (const ReplicaSnapshot& s : Snapshot()) {
      list.push_back({{"url", s.url},
                      {"pool", s.pool},
                      {"state", s.state},
                      {"in_flight", s.in_flight},
                      {"limit", s.limit},
                      {"ejections", s.ejections},
                      {"queued", s.queued},
                      {"restarts", s.restarts},
                      {"silence_ms", s.silence_ms},
                      {"stall_threshold_ms", s.stall_threshold_ms},
                      {"oldest_without_first_byte_ms", s.oldest_without_first_byte_ms},
                      {"weight", s.weight}});
    }
    std::string text = nlohmann::json({{"replicas", list}}).dump();
    co_await ex.Respond(200, "application/json", std::move(text));
    co_return;
  }
  const Endpoint endpoint = EndpointForPath(path);
  if (endpoint != Endpoint::kOther) {
    if (req.method != "POST") {
      co_await RespondMethodNotAllowed(ex, path, "POST");
      co_return;
    }
    co_await HandleApi(ex, endpoint);
    co_return;
  }
  if (path.starts_with("/v1/") || path == "/tokenize" || path == "/detokenize") {
    co_await HandlePlain(ex);
    co_return;
  }
  std::string text = http::JsonError(fmt::format("no route for {}; the gateway serves /v1/... "
                                                 "(OpenAI API), /healthz, /metrics and "
                                                 "/admin/replicas",
                                                 path),
                                     "invalid_request_error", 404);
  co_await ex.Respond(404, "application/json", std::move(text));
}

}  // namespace titan::gateway
