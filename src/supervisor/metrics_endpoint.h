// MetricsEndpoint: titan run's GET /metrics on 127.0.0.1:PORT (--metrics-port), on titan's one
// HTTP stack (src/http/server.h: one event loop, request timeouts against slowloris, a
// connection cap, no SO_REUSEPORT). It serves the Prometheus text last given to Set(); other
// paths get 404, other methods 405.
//
// Thread safety: Set() from any thread; Start/Stop from one.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "src/base/status.h"

namespace titan {
namespace http {
class Server;
}

class MetricsEndpoint {
 public:
  // Errors: ALREADY_EXISTS when the port is taken, PERMISSION_DENIED for a privileged port, both
  // naming --metrics-port and 127.0.0.1:PORT.
  static Result<std::unique_ptr<MetricsEndpoint>> Start(int port);
  ~MetricsEndpoint();  // Stop()
  void Stop();
  // The text the next scrapes get (Prometheus text format 0.0.4).
  void Set(std::string text);
  // A copy of the text served now.
  std::string text() const;

 private:
  MetricsEndpoint() = default;

  mutable std::mutex mutex_;
  std::string text_;
  std::unique_ptr<http::Server> server_;
};

}  // namespace titan
