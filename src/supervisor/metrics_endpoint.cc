#include "src/supervisor/metrics_endpoint.h"

#include <utility>

#include <fmt/format.h>
#include <boost/asio/awaitable.hpp>

#include "src/base/clock.h"
#include "src/http/server.h"

namespace titan {
namespace {

boost::asio::awaitable<void> Serve(const MetricsEndpoint& endpoint, http::Exchange& exchange) {
  const http::Request& request = exchange.request();
  // Named, not temporaries: GCC 12 mishandles temporaries in co_await expressions.
  int status = 200;
  std::string_view content_type = "text/plain; version=0.0.4";
  std::string body;
  http::Headers headers;
  if (request.method != "GET") {
    status = 405;
    content_type = "text/plain";
    body = "only GET is served\n";
    headers.push_back({"Allow", "GET"});
  } else if (request.path() != "/metrics") {
    status = 404;
    content_type = "text/plain";
    body = "titan run serves /metrics only\n";
  } else {
    body = endpoint.text();
  }
  co_await exchange.Respond(status, content_type, std::move(body), headers);
}

}  // namespace

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(int port) {
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  http::ServerOptions options;
  options.address = "127.0.0.1";
  options.port = port;
  options.max_body_bytes = 64 << 10;  // scrapes carry no body
  options.request_timeout_ns = 10 * kNsPerSecond;
  options.max_connections = 64;
  const MetricsEndpoint* self = endpoint.get();
  auto server = http::Server::Start(
      options, [self](http::Exchange& exchange) { return Serve(*self, exchange); });
  if (!server.ok()) return server.status().WithContext(fmt::format("--metrics-port {}", port));
  endpoint->server_ = std::move(*server);
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() { Stop(); }

void MetricsEndpoint::Stop() {
  if (server_) server_->Stop();
}

void MetricsEndpoint::Set(std::string text) {
  std::lock_guard<std::mutex> lock(mutex_);
  text_ = std::move(text);
}

std::string MetricsEndpoint::text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return text_;
}

}  // namespace titan
