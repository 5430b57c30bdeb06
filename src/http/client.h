// titan's HTTP/1.1 client connection (Boost.Asio + Boost.Beast, C++20 coroutines), used by
// titan load, the gateway's upstream side and metric scrapers.
//
// A ClientConnection is one TCP connection that sends one request at a time and can be reused
// (keep-alive) while is_open(). The response body is handed to a ResponseObserver piece by
// piece as it arrives (chunked encoding removed), each with the monotonic time it was read, so
// a caller can time the first byte and every SSE chunk. Nothing of the body is kept here.
//
// Thread safety: a connection belongs to the io_context thread its executor runs on; call it
// only from coroutines on that executor.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "src/base/status.h"
#include "src/http/message.h"

namespace titan::http {

// "http://host:port/prefix" split into parts. Only http:// is supported (no TLS).
struct Url {
  std::string host;
  int port = 80;
  std::string path;  // without a trailing '/', "" for the root
  std::string ToString() const;
};
// Errors name the URL and the accepted form.
Result<Url> ParseUrl(std::string_view text);

// Resolves `url`'s host once (blocking; call at start-up). IPv4 first.
Result<boost::asio::ip::tcp::endpoint> Resolve(const Url& url);

// Why an exchange failed, coarse enough to count by.
enum class ClientError {
  kNone = 0,
  kConnect,    // refused, unreachable, or no answer to the connect in time
  kTimeout,    // no complete answer within the deadline
  kClosed,     // the server closed or reset the connection before the response ended
  kMalformed,  // the response is not valid HTTP/1.1 (or its head is over the limit)
  kAborted,    // the observer asked to stop
};
std::string_view ClientErrorName(ClientError error);

struct ClientResult {
  ClientError error = ClientError::kNone;
  int status = 0;       // HTTP status when the head arrived, else 0
  std::string message;  // what failed, for logs; empty on success
  bool ok() const { return error == ClientError::kNone; }
};

class ResponseObserver {
 public:
  virtual ~ResponseObserver() = default;
  // The response head arrived (status and headers) at monotonic `now_ns`.
  virtual void OnHead(int status, const Headers& headers, int64_t now_ns) {}
  // A piece of the body arrived. Return false to abort the exchange (kAborted; the connection
  // is closed).
  virtual bool OnBody(std::string_view data, int64_t now_ns) = 0;
  // The client is about to wait on the socket for more of the body: every byte received so
  // far has been delivered through OnHead/OnBody. A relay flushes here, so that what one read
  // brought (a head with its first events, several events) leaves in one write.
  virtual void OnWaiting() {}
};

struct OutgoingRequest {
  std::string method = "POST";
  std::string target;  // "/v1/completions"
  std::string host;    // Host header
  Headers headers;     // extra headers (Content-Type, Authorization, ...)
  std::string body;
};

class ClientConnection {
 public:
  explicit ClientConnection(boost::asio::any_io_executor executor);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Connects within `timeout_ns`.
  boost::asio::awaitable<ClientResult> Connect(const boost::asio::ip::tcp::endpoint& endpoint,
                                               int64_t timeout_ns);
  // Sends `request` and reads the whole response within `deadline_mono_ns` (absolute
  // monotonic time), feeding the body to `observer`. With `body_idle_timeout_ns` > 0, once the
  // body has begun, a wait of that long for its next byte also ends it (kTimeout): a server
  // that goes silent mid-stream. On success the connection stays open when the server allows
  // keep-alive.
  boost::asio::awaitable<ClientResult> Send(const OutgoingRequest& request,
                                            ResponseObserver& observer, int64_t deadline_mono_ns,
                                            int64_t body_idle_timeout_ns = 0);
  bool is_open() const;
  // Closes the socket; a Send in progress ends with an error.
  void Close();

  struct State;  // defined in client.cc, which alone uses it

 private:
  std::unique_ptr<State> state_;
};

// A whole response, for the blocking Fetch below.
struct FetchedResponse {
  int status = 0;
  Headers headers;
  std::string body;
};

// Sends one request on a fresh connection and reads the whole answer (at most `max_body_bytes`)
// within `timeout_ns`, blocking the calling thread on a private io_context. For set-up and
// probes (health, /tokenize, /metrics), not for load. Errors: UNAVAILABLE (connect, closed),
// DEADLINE_EXCEEDED, DATA_LOSS (malformed or over the size), each naming the URL.
Result<FetchedResponse> Fetch(const Url& url, OutgoingRequest request, int64_t timeout_ns,
                              size_t max_body_bytes = 16 << 20);

// The same on the calling coroutine's executor, for probes from an event loop (health checks,
// scrapes). `request.host` must be set; errors name http://host/target.
boost::asio::awaitable<Result<FetchedResponse>> FetchAsync(
    const boost::asio::ip::tcp::endpoint& endpoint, const OutgoingRequest& request,
    int64_t timeout_ns, size_t max_body_bytes = 16 << 20);

}  // namespace titan::http
