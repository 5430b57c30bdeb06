// HttpServer: the agent's HTTP endpoints (cpp-httplib, thread pool). Every response is served
// from memory: nothing here touches /proc or NVML, so a scrape costs the same whatever the
// node is doing.
//
//   GET /metrics[?window=N]   Prometheus text 0.0.4, or OpenMetrics when the Accept header asks
//   GET /events[?after=ID&limit=N]   detected transients, JSON array, oldest first
//   GET /recorder?last=60s | ?from_ns=..&to_ns=..  [&format=perfetto|csv] [&match=SUBSTRING]
//   GET /healthz              {"status":"ok", collectors, series, events}
//   GET /                     a short index
// Bad query parameters get 400 with a message naming the parameter and the allowed form.
//
// Thread safety: handlers run on the server's pool threads; Agent's accessors are thread-safe.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "src/base/status.h"

namespace httplib {
class Server;
}

namespace titan {

class Agent;

class HttpServer {
 public:
  // Binds address:port (port 0: any free port) and starts serving. ALREADY_EXISTS when the port
  // is taken, PERMISSION_DENIED for a privileged port, both naming address:port and what to do.
  static Result<std::unique_ptr<HttpServer>> Start(Agent* agent, const std::string& address,
                                                   int port);
  ~HttpServer();
  void Stop();
  int port() const { return port_; }

 private:
  HttpServer(Agent* agent);
  void Routes();
  Agent* agent_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace titan
