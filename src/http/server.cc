#include "src/http/server.h"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <iterator>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/http/asio_names.h"

namespace titan::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;

namespace {
constexpr std::string_view kServerName = "titan";

// A response head, written directly (no Beast fields or serializer: an allocation per field
// and a serializer per response were several percent of the gateway's CPU). With
// `content_length` a whole response, else a chunked one (which also says Cache-Control:
// no-cache). An `extra` header replaces the head's own header of its name (Server,
// Content-Type, Cache-Control); framing headers (Content-Length, Transfer-Encoding,
// Connection) among `extra` are left out, as is one whose name is no token or whose value could
// split the head (CR, LF or NUL: never the case for headers parsed from a message).
std::string ResponseHead(int status, std::string_view content_type, const Headers& extra,
                         bool keep_alive, std::optional<size_t> content_length) {
  auto given = [&](std::string_view name) {
    for (const Header& h : extra) {
      if (EqualsIgnoreCase(h.name, name)) return true;
    }
    return false;
  };
  std::string head;
  head.reserve(160);
  fmt::format_to(std::back_inserter(head), "HTTP/1.1 {} {}\r\n", status, ReasonPhrase(status));
  if (!given("Server")) head.append("Server: ").append(kServerName).append("\r\n");
  if (!given("Content-Type")) head.append("Content-Type: ").append(content_type).append("\r\n");
  if (!content_length && !given("Cache-Control")) head.append("Cache-Control: no-cache\r\n");
  for (const Header& h : extra) {
    if (IsFramingHeader(h.name) || !IsToken(h.name) || !SafeInHead(h.value)) continue;
    head.append(h.name).append(": ").append(h.value).append("\r\n");
  }
  if (!keep_alive) head.append("Connection: close\r\n");
  if (content_length) {
    fmt::format_to(std::back_inserter(head), "Content-Length: {}\r\n\r\n", *content_length);
  } else {
    head.append("Transfer-Encoding: chunked\r\n\r\n");
  }
  return head;
}
}  // namespace

std::string JsonError(std::string_view message, std::string_view type, int code) {
  nlohmann::json body = {
      {"error", {{"message", message}, {"type", type}, {"code", code}}},
  };
  return body.dump();
}

struct Server::Impl {
  ServerOptions options;
  Handler handler;
  std::vector<std::unique_ptr<asio::io_context>> loops;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::vector<std::thread> threads;
  std::unique_ptr<tcp::acceptor> acceptor;
  size_t next_loop = 0;
  bool stopped = false;

  std::atomic<uint64_t> accepted{0}, open{0}, refused{0}, requests{0}, bad_requests{0}, writes{0};
  // The whole answer to a connection over max_connections: a 503 with a JSON error and
  // Retry-After, like every other refusal.
  std::string busy_response;

  asio::awaitable<void> AcceptLoop();
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, Server::Impl* server)
      : stream_(std::move(socket)), server_(server) {
    server_->open.fetch_add(1, std::memory_order_relaxed);
  }
  ~Connection() { server_->open.fetch_sub(1, std::memory_order_relaxed); }

  asio::awaitable<void> Run();

  asio::any_io_executor executor() { return stream_.get_executor(); }

  // Fails the read or write in progress (operation_aborted); Run then closes the connection.
  void Cancel() { stream_.cancel(); }
  // Which exchange a disconnect watch reports to; null once its handler ended.
  struct Watch {
    Exchange* exchange = nullptr;
  };
  // Watches the socket while a handler runs: end of stream or an error means the client left
  // (Exchange::ClientLeft, at once when it left already); bytes mean a pipelined request (the
  // watch ends and leaves them to be read).
  void WatchForDisconnect(std::shared_ptr<Watch> watch);
  // Writes `buffers` whole; false when the client is gone. Most writes fit in the socket's
  // send buffer: they leave in one non-blocking send, with no timer armed and no trip through
  // the event loop (an SSE relay makes one write per event). What does not fit is written
  // asynchronously under the write timeout.
  template <typename Buffers>
  asio::awaitable<bool> WriteBuffers(const Buffers& buffers) {
    beast::error_code ec;
    const size_t sent = SendNow(buffers, ec);
    if (!ec && sent == asio::buffer_size(buffers)) co_return true;
    if (ec && !WouldBlock(ec)) co_return false;
    beast::buffers_suffix<Buffers> rest(buffers);
    rest.consume(sent);
    stream_.expires_after(std::chrono::nanoseconds(server_->options.write_timeout_ns));
    writing_ = true;
    auto [write_ec, n] = co_await asio::async_write(stream_, rest, kNoThrow);
    writing_ = false;
    co_return !write_ec;
  }
  // One non-blocking send of `buffers` (one sendmsg): the bytes the socket took, with `ec` set
  // when it took none (would_block: its send buffer is full) or failed.
  template <typename Buffers>
  size_t SendNow(const Buffers& buffers, beast::error_code& ec) {
    server_->writes.fetch_add(1, std::memory_order_relaxed);
    return stream_.socket().write_some(buffers, ec);  // non-blocking: see Run
  }
  // True while WriteBuffers waits for the socket to take the rest of a write.
  bool writing() const { return writing_; }

 private:
  asio::awaitable<bool> WaitForRequest();
  asio::awaitable<void> RespondError(int status, std::string_view message);

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  Server::Impl* server_;
  bool writing_ = false;
};

asio::awaitable<bool> Connection::WaitForRequest() {
  if (buffer_.size() > 0) co_return true;
  // Idle keep-alive: wait for the first byte of the next request.
  stream_.expires_after(std::chrono::nanoseconds(server_->options.idle_timeout_ns));
  auto [ec, n] = co_await stream_.async_read_some(buffer_.prepare(4096), kNoThrow);
  if (ec) co_return false;
  buffer_.commit(n);
  co_return true;
}

asio::awaitable<void> Connection::RespondError(int status, std::string_view message) {
  const std::string body = JsonError(message, "invalid_request_error", status);
  const std::string head = ResponseHead(status, "application/json", {}, false, body.size());
  const std::array<asio::const_buffer, 2> pieces = {asio::buffer(head), asio::buffer(body)};
  co_await WriteBuffers(pieces);
}

asio::awaitable<void> Connection::Run() {
  auto self = shared_from_this();
  const ServerOptions& options = server_->options;
  // Synchronous operations (WriteBuffers' first try) return would_block instead of blocking;
  // asynchronous ones are unaffected.
  beast::error_code nonblocking_ec;
  stream_.socket().non_blocking(true, nonblocking_ec);
  for (;;) {
    if (!co_await WaitForRequest()) break;
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<uint32_t>(options.max_header_bytes));
    parser.body_limit(options.max_body_bytes);
    stream_.expires_after(std::chrono::nanoseconds(options.request_timeout_ns));
    auto [ec, n] = co_await bhttp::async_read(stream_, buffer_, parser, kNoThrow);
    if (ec) {
      if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
          ec == asio::error::connection_reset) {
        break;
      }
      server_->bad_requests.fetch_add(1, std::memory_order_relaxed);
      // A request that did not arrive in time (beast::error::timeout) has had its socket
      // closed by the stream already; the others get an answer that says why.
      if (ec != beast::error::timeout) {
        int status = 400;
        std::string why = fmt::format("malformed HTTP request: {}", ec.message());
        if (ec == bhttp::error::header_limit) {
          status = 431;
          why = fmt::format("request head over {} bytes", options.max_header_bytes);
        } else if (ec == bhttp::error::body_limit) {
          status = 413;
          why = fmt::format("request body over the limit of {} bytes", options.max_body_bytes);
        }
        co_await RespondError(status, why);
      }
      break;
    }
    // A Transfer-Encoding whose last coding is not chunked leaves the body's end unknown: Beast
    // then reads no body, and its bytes would be parsed as the next request (smuggling). RFC
    // 9112 section 6.3: answer 400 and close.
    if (parser.get().find(bhttp::field::transfer_encoding) != parser.get().end() &&
        !parser.chunked()) {
      server_->bad_requests.fetch_add(1, std::memory_order_relaxed);
      co_await RespondError(400,
                            "a Transfer-Encoding that does not end with chunked is not "
                            "accepted: send the body with Content-Length or chunked");
      break;
    }
    server_->requests.fetch_add(1, std::memory_order_relaxed);
    bhttp::request<bhttp::string_body> message = parser.release();
    Request request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    for (const auto& field : message) {
      request.headers.push_back({std::string(field.name_string()), std::string(field.value())});
    }
    request.body = std::move(message.body());
    Exchange exchange(this, std::move(request), MonoNowNs(), message.keep_alive());
    auto watch = std::make_shared<Watch>(Watch{&exchange});
    if (buffer_.size() == 0) WatchForDisconnect(watch);
    co_await server_->handler(exchange);
    watch->exchange = nullptr;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // ends the watch's wait
    if (exchange.client_gone_) break;
    if (exchange.state_ == Exchange::State::kNone) {
      std::string error = JsonError("the handler sent no response", "server_error", 500);
      co_await exchange.Respond(500, "application/json", std::move(error));
    } else if (exchange.state_ == Exchange::State::kStreaming) {
      co_await exchange.EndStream();
    }
    if (exchange.client_gone_ || !exchange.keep_alive_) break;
  }
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream_.close();
}

void Connection::WatchForDisconnect(std::shared_ptr<Watch> watch) {
  // Look first, then wait: Asio's epoll is edge-triggered and a wait sees only the next edge,
  // so an end of stream that arrived with the request (a client that sent and closed at once)
  // would never be seen by a wait alone. Both run on this loop's thread, before its next
  // epoll_wait: nothing arrives unseen between them.
  char byte = 0;
  const ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return;  // the next request's bytes: the client is there
  if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    watch->exchange->ClientLeft();  // end of stream, or reset
    return;
  }
  stream_.socket().async_wait(
      tcp::socket::wait_read, [self = shared_from_this(), watch](beast::error_code ec) {
        if (watch->exchange == nullptr || ec == asio::error::operation_aborted) return;
        if (ec) {
          watch->exchange->ClientLeft();
          return;
        }
        self->WatchForDisconnect(watch);
      });
}

void Exchange::ClientLeft() {
  client_gone_ = true;
  if (on_client_gone_) {
    std::function<void()> fn = std::move(on_client_gone_);
    on_client_gone_ = nullptr;
    fn();
  }
}

asio::any_io_executor Exchange::executor() const { return connection_->executor(); }

asio::awaitable<bool> Exchange::Respond(int status, std::string_view content_type, std::string body,
                                        const Headers& extra) {
  TITAN_CHECK(state_ == State::kNone) << "Respond after a response";
  state_ = State::kDone;
  const std::string head_bytes =
      ResponseHead(status, content_type, extra, keep_alive_, body.size());
  const std::array<asio::const_buffer, 2> pieces = {asio::buffer(head_bytes), asio::buffer(body)};
  const bool ok = co_await connection_->WriteBuffers(pieces);
  if (!ok) client_gone_ = true;
  co_return ok;
}

asio::awaitable<bool> Exchange::BeginStream(int status, std::string_view content_type,
                                            const Headers& extra, std::string_view data, bool end) {
  TITAN_CHECK(state_ == State::kNone) << "BeginStream after a response";
  state_ = State::kStreaming;
  co_return co_await SendPieces(
      ResponseHead(status, content_type, extra, keep_alive_, std::nullopt), data, end);
}

void Exchange::Abort() {
  client_gone_ = true;
  connection_->Cancel();
}

asio::awaitable<bool> Exchange::Write(std::string_view data, bool end) {
  TITAN_CHECK(state_ == State::kStreaming) << "Write outside a stream";
  co_return co_await SendPieces({}, data, end);
}

namespace {
// `data` as one chunk of a chunked body: its size line and its end (nothing for empty data: an
// empty chunk would end the stream).
struct ChunkFrame {
  explicit ChunkFrame(std::string_view data)
      : size_line(data.empty() ? std::string() : fmt::format("{:x}\r\n", data.size())),
        end(data.empty() ? std::string_view() : std::string_view("\r\n")) {}
  std::string size_line;
  std::string_view end;
};
}  // namespace

Exchange::TryWriteResult Exchange::TryWrite(std::string_view data) {
  TITAN_CHECK(state_ == State::kStreaming) << "TryWrite outside a stream";
  if (client_gone_) return TryWriteResult::kGone;
  if (connection_->writing() || !unsent_.empty()) return TryWriteResult::kBusy;
  if (data.empty()) return TryWriteResult::kSent;
  const ChunkFrame frame(data);
  const std::array<asio::const_buffer, 3> pieces = {asio::buffer(frame.size_line),
                                                    asio::buffer(data), asio::buffer(frame.end)};
  beast::error_code ec;
  const size_t sent = connection_->SendNow(pieces, ec);
  if (ec && !WouldBlock(ec)) {
    client_gone_ = true;
    return TryWriteResult::kGone;
  }
  if (sent == asio::buffer_size(pieces)) return TryWriteResult::kSent;
  // Keep what the socket did not take: the next write sends it first.
  beast::buffers_suffix<decltype(pieces)> rest(pieces);
  rest.consume(sent);
  for (const auto buffer : beast::buffers_range_ref(rest)) {
    unsent_.append(static_cast<const char*>(buffer.data()), buffer.size());
  }
  return TryWriteResult::kQueued;
}

asio::awaitable<bool> Exchange::SendPieces(std::string_view head, std::string_view data, bool end) {
  if (end) state_ = State::kDone;
  if (client_gone_) co_return false;
  const ChunkFrame frame(data);
  // unsent_ (bytes TryWrite accepted) and head never both hold bytes: unsent_ only follows
  // the stream's head.
  const std::array<asio::const_buffer, 6> pieces = {
      asio::buffer(unsent_),
      asio::buffer(head),
      asio::buffer(frame.size_line),
      asio::buffer(data),
      asio::buffer(frame.end),
      asio::buffer(end ? std::string_view("0\r\n\r\n") : std::string_view())};
  if (asio::buffer_size(pieces) == 0) co_return true;
  const bool ok = co_await connection_->WriteBuffers(pieces);
  unsent_.clear();
  if (!ok) client_gone_ = true;
  co_return ok;
}

asio::awaitable<void> Server::Impl::AcceptLoop() {
  for (;;) {
    asio::io_context& loop = *loops[next_loop];
    next_loop = (next_loop + 1) % loops.size();
    auto [ec, socket] = co_await acceptor->async_accept(loop, kNoThrow);
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
      // EMFILE and friends: back off briefly rather than spin.
      RateLimitedLog static log(5 * kNsPerSecond);
      log.Log(LogLevel::kWarning, "http", "accept failed: {}", ec.message());
      asio::steady_timer pause(acceptor->get_executor(), std::chrono::milliseconds(10));
      co_await pause.async_wait(kNoThrow);
      continue;
    }
    accepted.fetch_add(1, std::memory_order_relaxed);
    if (open.load(std::memory_order_relaxed) >= options.max_connections) {
      refused.fetch_add(1, std::memory_order_relaxed);
      beast::error_code ignored;
      asio::write(socket, asio::buffer(busy_response), ignored);
      socket.close(ignored);
      continue;
    }
    socket.set_option(tcp::no_delay(true));
    auto connection = std::make_shared<Connection>(std::move(socket), this);
    // The handler holds the connection until Run() ends: the coroutine may first run on
    // another loop's thread, after this iteration dropped its reference.
    asio::co_spawn(loop, connection->Run(), [connection](std::exception_ptr) {});
  }
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options, Handler handler) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handler = std::move(handler);
  const std::string busy =
      JsonError(fmt::format("the server is at its limit of {} open connections; retry after the "
                            "Retry-After seconds",
                            options.max_connections),
                "service_unavailable", 503);
  impl->busy_response = fmt::format(
      "HTTP/1.1 503 Service Unavailable\r\nServer: {}\r\nConnection: close\r\n"
      "Content-Type: application/json\r\nRetry-After: 1\r\nContent-Length: {}\r\n\r\n{}",
      kServerName, busy.size(), busy);
  int threads = std::max(1, options.threads);
  for (int i = 0; i < threads; ++i) {
    impl->loops.push_back(std::make_unique<asio::io_context>(1));
    impl->guards.push_back(asio::make_work_guard(*impl->loops.back()));
  }
  beast::error_code ec;
  auto address = asio::ip::make_address(options.address, ec);
  if (ec) {
    return InvalidArgumentError(
        fmt::format("'{}' is not an IP address; give one such as 127.0.0.1 or ::1 (or 0.0.0.0 "
                    "for every interface)",
                    options.address));
  }
  tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  impl->acceptor = std::make_unique<tcp::acceptor>(*impl->loops[0]);
  impl->acceptor->open(endpoint.protocol(), ec);
  if (!ec) impl->acceptor->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor->bind(endpoint, ec);
  if (!ec) impl->acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::string what =
        fmt::format("cannot listen on {}:{}: {}", options.address, options.port, ec.message());
    if (ec == asio::error::address_in_use) {
      return AlreadyExistsError(what + "; another process has this port: pick another port");
    }
    if (ec == asio::error::access_denied) {
      return PermissionDeniedError(what + "; ports below 1024 need root: pick a higher port");
    }
    return UnavailableError(what);
  }
  Impl* raw = impl.get();
  std::unique_ptr<Server> server(new Server(std::move(impl)));
  server->port_ = raw->acceptor->local_endpoint().port();
  asio::co_spawn(*raw->loops[0], raw->AcceptLoop(), asio::detached);
  for (auto& loop : raw->loops) {
    asio::io_context* context = loop.get();
    raw->threads.emplace_back([context] { context->run(); });
  }
  return server;
}

asio::any_io_executor Server::executor(int loop) const {
  TITAN_CHECK(loop >= 0 && loop < static_cast<int>(impl_->loops.size())) << "no loop " << loop;
  return impl_->loops[loop]->get_executor();
}

void Server::StopAccepting() {
  if (!impl_ || impl_->stopped) return;
  Impl* impl = impl_.get();
  asio::post(*impl->loops[0], [impl] {
    beast::error_code ignored;
    impl->acceptor->close(ignored);
  });
}

void Server::Stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  for (auto& loop : impl_->loops) loop->stop();
  for (auto& thread : impl_->threads) thread.join();
  impl_->guards.clear();
  impl_->acceptor.reset();
  // Destroying the loops destroys the suspended connection coroutines and their sockets.
  impl_->loops.clear();
}

ServerStats Server::stats() const {
  ServerStats s;
  s.connections_accepted = impl_->accepted.load();
  s.connections_open = impl_->open.load();
  s.connections_refused = impl_->refused.load();
  s.requests = impl_->requests.load();
  s.bad_requests = impl_->bad_requests.load();
  s.writes = impl_->writes.load();
  return s;
}

}  // namespace titan::http
