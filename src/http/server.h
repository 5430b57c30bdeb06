// titan's one HTTP/1.1 server (Boost.Asio + Boost.Beast, C++20 coroutines); serves titan
// serve-sim, titan gateway and the exporters of titan agent and titan run.
//
// Model: one acceptor; `threads` event loops, each an io_context run by one thread. An accepted
// connection is handed to a loop round-robin and lives there: its handler coroutines never run
// concurrently with each other, so per-loop state needs no lock, but state shared between
// loops (threads > 1) must be thread-safe.
//
// Per connection: keep-alive, pipelining-safe (one request at a time), the whole request (head
// and body) must arrive within `request_timeout_ns` of its first byte or the connection is closed
// (slowloris), an idle keep-alive connection is closed after `idle_timeout_ns`, heads over
// `max_header_bytes` get 431 and bodies over `max_body_bytes` 413 with a JSON error, malformed
// requests 400. Past `max_connections` open connections, new ones get 503 and are closed. The
// listening socket is bound without SO_REUSEPORT, so a second server on a taken port fails.
//
// While a handler runs, the server watches its connection for the client leaving (see
// Exchange::OnClientGone).
//
// Handlers answer with Exchange::Respond (a whole response) or stream with BeginStream /
// Write / EndStream (chunked transfer encoding; each Write is sent at once, unbuffered). A
// handler that returns without responding sends 500.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "src/base/status.h"
#include "src/http/message.h"

namespace titan::http {

struct ServerOptions {
  std::string address = "127.0.0.1";
  int port = 0;  // 0: an ephemeral port (see Server::port())
  int threads = 1;
  size_t max_header_bytes = 16 << 10;
  size_t max_body_bytes = 8 << 20;
  int64_t request_timeout_ns = 30'000'000'000;
  int64_t idle_timeout_ns = 60'000'000'000;
  int64_t write_timeout_ns = 30'000'000'000;  // one write to a client that does not read
  size_t max_connections = 20'000;
};

struct ServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_open = 0;
  uint64_t connections_refused = 0;  // over max_connections
  uint64_t requests = 0;
  uint64_t bad_requests = 0;  // malformed, too large, timed out mid-request
  uint64_t writes = 0;        // response writes (each one gathered write to a socket)
};

class Connection;

// One request and its response. Owned by the server; valid during the handler's coroutine.
class Exchange {
 public:
  const Request& request() const { return request_; }
  boost::asio::any_io_executor executor() const;
  // Monotonic ns when the request's last byte was read.
  int64_t received_ns() const { return received_ns_; }

  // Sends a whole response. Returns false when the client is gone.
  boost::asio::awaitable<bool> Respond(int status, std::string_view content_type, std::string body,
                                       const Headers& extra = {});
  // Sends the head of a chunked response; with `data`, also its first chunk, and with `end`
  // the last chunk too: what is known at once leaves in one write (one sendmsg), as nginx
  // sends an upstream's head with the body bytes that arrived beside it.
  boost::asio::awaitable<bool> BeginStream(int status, std::string_view content_type,
                                           const Headers& extra = {}, std::string_view data = {},
                                           bool end = false);
  // Sends one chunk now (none when `data` is empty); with `end`, the last chunk in the same
  // write, which ends the stream. False when the client is gone (then stop producing).
  boost::asio::awaitable<bool> Write(std::string_view data, bool end = false);
  // Sends one chunk now if that needs no wait, for a relay that sends from a callback (where a
  // coroutine's wake-up per event would cost more than the send). Never suspends:
  //   kSent: the socket took the chunk whole;
  //   kQueued: the socket took part of it; the exchange keeps the rest (unsent() is true), and
  //     the next Write or EndStream sends it first: the caller must make one happen;
  //   kBusy: nothing sent, as a write is in progress or bytes are kept: Write `data` instead;
  //   kGone: the client is gone (then stop producing).
  // Empty `data` sends nothing (kSent). Only between BeginStream and the stream's end.
  enum class TryWriteResult { kSent, kQueued, kBusy, kGone };
  TryWriteResult TryWrite(std::string_view data);
  // True while TryWrite has kept bytes that no write has sent yet.
  bool unsent() const { return !unsent_.empty(); }
  // Sends the last chunk; the connection may then serve the next request.
  boost::asio::awaitable<bool> EndStream() { return Write({}, true); }

  // True between BeginStream and the end of the stream.
  bool streaming() const { return state_ == State::kStreaming; }
  bool responded() const { return state_ != State::kNone; }
  // True once a write failed (client disconnected or stopped reading), or once the server saw
  // the client close or reset its connection while the handler ran (see OnClientGone).
  bool client_gone() const { return client_gone_; }
  // Registers `fn` (replacing an earlier one; null clears it) to run once, on the connection's
  // event loop, when the server sees the client close or reset its connection before the
  // response ended: a handler waiting for slow work (an upstream answer, a queue seat) can give
  // it up, as nginx does for a client that left (499). The server watches the connection for
  // this while the handler runs and no further request bytes have arrived (a pipelined request
  // stops the watch). A client that half-closes (shutdown(SHUT_WR)) after its request counts as
  // gone. Does not run `fn` when the client is gone already: check client_gone() first.
  void OnClientGone(std::function<void()> fn) { on_client_gone_ = std::move(fn); }
  // Cuts the client off now: a write in progress fails, later ones do nothing, and the
  // connection closes without ending a stream's chunked body (so the client sees a truncated
  // answer, not a complete one). For a client that cannot be served further, such as one that
  // fell too far behind its stream. From the connection's event loop only.
  void Abort();

 private:
  friend class Connection;
  enum class State { kNone, kStreaming, kDone };
  Exchange(Connection* connection, Request request, int64_t received_ns, bool keep_alive)
      : connection_(connection),
        request_(std::move(request)),
        received_ns_(received_ns),
        keep_alive_(keep_alive) {}
  Connection* connection_;
  Request request_;
  int64_t received_ns_;
  // Sends head (may be empty), then `data` as a chunk, then the last chunk when `end`.
  boost::asio::awaitable<bool> SendPieces(std::string_view head, std::string_view data, bool end);
  // The server saw the client go: marks it gone and runs the OnClientGone function.
  void ClientLeft();
  bool keep_alive_;
  std::string unsent_;  // framed chunk bytes TryWrite accepted and the socket did not take
  State state_ = State::kNone;
  bool client_gone_ = false;
  std::function<void()> on_client_gone_;
};

using Handler = std::function<boost::asio::awaitable<void>(Exchange&)>;

// A JSON error body in OpenAI's shape: {"error":{"message":...,"type":...,"code":...}}.
std::string JsonError(std::string_view message, std::string_view type, int code);

class Server {
 public:
  // Binds, listens and starts the threads. Errors: the address cannot be bound (in use,
  // permission), named with what to do.
  static Result<std::unique_ptr<Server>> Start(const ServerOptions& options, Handler handler);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const { return port_; }
  // The executor of event loop `loop` (0 <= loop < threads), for a caller's own coroutines
  // (timers, upstream connections) that must run beside the handlers of that loop.
  boost::asio::any_io_executor executor(int loop = 0) const;
  // Stops accepting, closes every connection, joins the threads. Idempotent; not from a
  // handler.
  void Stop();
  // Stops accepting new connections; open ones are served until they close (drain).
  void StopAccepting();
  ServerStats stats() const;

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace titan::http
