// HttpServer: the agent's HTTP endpoints, on titan's one HTTP stack (src/http/server.h). Every
// response is served from memory: nothing here touches /proc or NVML, so a scrape costs the same
// whatever the node is doing.
//
//   GET /metrics[?window=N]   Prometheus text 0.0.4, or OpenMetrics when the Accept header asks
//   GET /events[?after=ID&limit=N]   detected transients, JSON array, oldest first
//   GET /recorder?last=60s | ?from_ns=..&to_ns=..  [&format=perfetto|csv] [&match=SUBSTRING]
//   GET /healthz              {"status":"ok", collectors, series, events}
//   GET /                     a short index
// Bad query parameters get 400 with a message naming the parameter and the allowed form; other
// paths 404, other methods 405.
//
// Limits (docs/agent.md): at most kMaxConnections open connections (more get 503 and are
// closed); a request must arrive whole within 10 s of its first byte (slowloris), its head within
// 16 KiB and its body within 64 KiB; an idle keep-alive connection is closed after 60 s. A
// /recorder dump is streamed (chunked encoding) in pieces of about 256 KiB, never built whole,
// and at most kMaxConcurrentDumps are served at once: more get 503 with Retry-After and a JSON
// error saying why.
//
// Thread safety: the server's one event loop only parses requests and writes responses.
// Everything that takes the agent's locks (rendering /metrics, /events, /healthz, and each piece
// of a dump) runs on a small WorkPool, so a handler waiting for a lock a collector holds, or a
// large dump, never stalls the loop: other connections are still read and answered, their work
// queued behind at most the pieces already running. Agent's accessors are thread-safe.
// Start/Stop from one thread.
#pragma once

#include <memory>
#include <string>

#include "src/base/status.h"

namespace titan {

class Agent;

class HttpServer {
 public:
  static constexpr size_t kMaxConnections = 256;
  static constexpr int kMaxConcurrentDumps = 2;

  // Binds address:port (port 0: any free port) and starts serving. ALREADY_EXISTS when the port
  // is taken, PERMISSION_DENIED for a privileged port, both naming address:port and what to do.
  static Result<std::unique_ptr<HttpServer>> Start(Agent* agent, const std::string& address,
                                                   int port);
  ~HttpServer();  // Stop()
  // Stops serving: dumps in progress end unfinished. Idempotent.
  void Stop();
  int port() const;

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace titan
