#include "src/http/client.h"

#include <array>
#include <chrono>
#include <iterator>
#include <optional>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/text.h"
#include "src/http/asio_names.h"

namespace titan::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;

namespace {
constexpr size_t kReadPiece = 4 << 10;  // per connection: bounds memory per stream
constexpr uint32_t kMaxResponseHead = 64 << 10;
// Bytes the body parser may hold unparsed (a chunk header and its extensions): a peer that
// sends more without completing one is malformed, not a reason to grow the buffer.
constexpr size_t kMaxBodyElement = 64 << 10;

ClientError Classify(const beast::error_code& ec) {
  if (ec == beast::error::timeout) return ClientError::kTimeout;
  if (ec == asio::error::eof || ec == asio::error::connection_reset ||
      ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message ||
      ec == asio::error::broken_pipe || ec == asio::error::operation_aborted ||
      ec == asio::error::bad_descriptor) {
    return ClientError::kClosed;
  }
  if (ec.category() == beast::error_code(bhttp::error::end_of_stream).category()) {
    return ClientError::kMalformed;
  }
  return ClientError::kClosed;
}

// `request`'s head, as one string (one write with the body, no serializer), or the reason it
// cannot be sent. Content-Length is sent for a body, and for POST, PUT and PATCH always.
std::optional<std::string> RequestHead(const OutgoingRequest& request, std::string* why) {
  if (!IsToken(request.method) || !SafeInHead(request.target) ||
      request.target.find(' ') != std::string::npos || !SafeInHead(request.host)) {
    *why = "the request's method, target or host is not valid in an HTTP request line";
    return std::nullopt;
  }
  std::string head;
  head.reserve(128 + request.target.size());
  head.append(request.method).append(" ").append(request.target).append(" HTTP/1.1\r\nHost: ");
  head.append(request.host).append("\r\n");
  bool user_agent = false;
  for (const Header& h : request.headers) {
    // Written from the request's own fields and body: not sent twice.
    if (IsFramingHeader(h.name) || EqualsIgnoreCase(h.name, "Host")) continue;
    if (!IsToken(h.name) || !SafeInHead(h.value)) {
      *why = fmt::format("header '{}' is not valid in an HTTP request", Excerpt(h.name));
      return std::nullopt;
    }
    user_agent = user_agent || EqualsIgnoreCase(h.name, "User-Agent");
    head.append(h.name).append(": ").append(h.value).append("\r\n");
  }
  if (!user_agent) head.append("User-Agent: titan\r\n");
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    fmt::format_to(std::back_inserter(head), "Content-Length: {}\r\n", request.body.size());
  }
  head.append("\r\n");
  return head;
}

std::chrono::steady_clock::time_point ToSteady(int64_t mono_ns) {
  // MonoNowNs is CLOCK_MONOTONIC, as is steady_clock on Linux.
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(mono_ns));
}
}  // namespace

std::string Url::ToString() const { return fmt::format("http://{}:{}{}", host, port, path); }

Result<Url> ParseUrl(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError(fmt::format(
        "bad URL '{}': {}; expected http://HOST[:PORT][/PATH], e.g. http://127.0.0.1:8000",
        Excerpt(text), why));
  };
  std::string_view rest = text;
  if (rest.starts_with("https://")) return bad("https is not supported (no TLS in titan)");
  if (!rest.starts_with("http://")) return bad("it must start with http://");
  rest.remove_prefix(7);
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return bad("a query or fragment ('?', '#') is not supported: give the base URL");
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  Url url;
  url.path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  while (!url.path.empty() && url.path.back() == '/') url.path.pop_back();
  if (authority.empty()) return bad("no host");
  if (authority.find('@') != std::string_view::npos) {
    return bad("credentials in a URL (user:password@) are not supported");
  }
  std::string_view host = authority;
  std::string_view port;
  if (authority.front() == '[') {  // [::1]:8000
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("expected ':' after ']'");
      port = after.substr(1);
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return bad("no host");
  url.host = std::string(host);
  if (!port.empty()) {
    int64_t p = 0;
    if (!ParseInt64(port, &p) || p < 1 || p > 65535) return bad("the port must be 1..65535");
    url.port = static_cast<int>(p);
  }
  return url;
}

Result<tcp::endpoint> Resolve(const Url& url) {
  asio::io_context context;
  tcp::resolver resolver(context);
  beast::error_code ec;
  auto results = resolver.resolve(url.host, std::to_string(url.port), ec);
  if (ec || results.empty()) {
    return UnavailableError(
        fmt::format("cannot resolve '{}': {}", url.host, ec ? ec.message() : "no address"));
  }
  for (const auto& entry : results) {
    if (entry.endpoint().address().is_v4()) return entry.endpoint();
  }
  return results.begin()->endpoint();
}

std::string_view ClientErrorName(ClientError error) {
  switch (error) {
    case ClientError::kNone:
      return "none";
    case ClientError::kConnect:
      return "connect";
    case ClientError::kTimeout:
      return "timeout";
    case ClientError::kClosed:
      return "closed";
    case ClientError::kMalformed:
      return "malformed";
    case ClientError::kAborted:
      return "aborted";
  }
  return "unknown";
}

struct ClientConnection::State {
  explicit State(asio::any_io_executor executor) : stream(std::move(executor)) {
    // Beast reads up to the buffer's free capacity (512 bytes when it starts empty): one
    // recvmsg then brings a whole answer or /metrics page, not 512 bytes of it.
    buffer.reserve(kReadPiece);
  }
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bool open = false;
  char piece[kReadPiece];
  asio::steady_timer body_timer{stream.get_executor()};  // see BodyWatch
};

namespace {
// The time limits on reading a response body, kept by one lazy timer per Send instead of a
// timer armed and cancelled around every read (a trip through the timer queue per read, and a
// timerfd_settime whenever it became the earliest timer: per SSE event on a relay). The timer
// fires at the earliest moment the body could be late, and re-arms if it is not (nginx keeps
// its read timers the same way). Shared by Send and the timer's handler; Send sets `active`
// false when it ends, after which the handler touches nothing.
struct BodyWatch {
  int64_t deadline_ns = 0;       // the whole answer's (monotonic)
  int64_t idle_ns = 0;           // > 0: at most this long between reads once the body began
  int64_t waiting_since_ns = 0;  // > 0: when the current read began, the body having begun
  bool active = true;
  bool expired = false, idle_expired = false;

  // When the body is late, as known now.
  int64_t LateAt() const {
    if (idle_ns > 0 && waiting_since_ns > 0)
      return std::min(deadline_ns, waiting_since_ns + idle_ns);
    return deadline_ns;
  }
};

void WatchBody(ClientConnection::State& s, const std::shared_ptr<BodyWatch>& watch) {
  // Before the body begins, look again every idle period: it may begin at any moment.
  const int64_t now = MonoNowNs();
  int64_t at = watch->LateAt();
  if (watch->idle_ns > 0 && watch->waiting_since_ns == 0) at = std::min(at, now + watch->idle_ns);
  s.body_timer.expires_at(ToSteady(at));
  s.body_timer.async_wait([&s, watch](const beast::error_code& ec) {
    if (ec || !watch->active) return;  // cancelled, or Send ended (then `s` may be gone)
    const int64_t late_at = watch->LateAt();
    if (MonoNowNs() < late_at) {
      WatchBody(s, watch);
      return;
    }
    watch->expired = true;
    watch->idle_expired = late_at < watch->deadline_ns;
    beast::error_code ignored;
    s.stream.socket().cancel(ignored);  // the read in progress ends (operation_aborted)
  });
}
}  // namespace

ClientConnection::ClientConnection(asio::any_io_executor executor)
    : state_(std::make_unique<State>(std::move(executor))) {}

ClientConnection::~ClientConnection() = default;

bool ClientConnection::is_open() const { return state_->open; }

void ClientConnection::Close() {
  state_->open = false;
  beast::error_code ignored;
  state_->stream.socket().close(ignored);
}

asio::awaitable<ClientResult> ClientConnection::Connect(const tcp::endpoint& endpoint,
                                                        int64_t timeout_ns) {
  State& s = *state_;
  s.stream.expires_after(std::chrono::nanoseconds(timeout_ns));
  auto [ec] = co_await s.stream.async_connect(endpoint, kNoThrow);
  if (ec) {
    Close();
    co_return ClientResult{ClientError::kConnect, 0,
                           fmt::format("connect to {}:{}: {}", endpoint.address().to_string(),
                                       endpoint.port(), ec.message())};
  }
  s.stream.socket().set_option(tcp::no_delay(true));
  // Synchronous sends (Send's first try) return would_block instead of blocking; asynchronous
  // operations are unaffected.
  beast::error_code nonblocking_ec;
  s.stream.socket().non_blocking(true, nonblocking_ec);
  s.buffer.clear();
  s.open = true;
  co_return ClientResult{};
}

asio::awaitable<ClientResult> ClientConnection::Send(const OutgoingRequest& request,
                                                     ResponseObserver& observer,
                                                     int64_t deadline_mono_ns,
                                                     int64_t body_idle_timeout_ns) {
  State& s = *state_;
  ClientResult result;
  auto fail = [&](ClientError error, std::string message) {
    Close();
    result.error = error;
    result.message = std::move(message);
    return result;
  };
  if (!s.open) co_return fail(ClientError::kClosed, "the connection is not open");

  std::string why;
  const std::optional<std::string> request_head = RequestHead(request, &why);
  if (!request_head) co_return fail(ClientError::kMalformed, why);
  s.stream.expires_at(ToSteady(deadline_mono_ns));
  {
    // One non-blocking send (it nearly always takes the whole request), then the rest under
    // the deadline.
    const std::array<asio::const_buffer, 2> pieces = {asio::buffer(*request_head),
                                                      asio::buffer(request.body)};
    beast::error_code ec;
    const size_t sent = s.stream.socket().write_some(pieces, ec);  // non-blocking: see Connect
    if (ec && !WouldBlock(ec)) {
      co_return fail(Classify(ec), fmt::format("sending the request: {}", ec.message()));
    }
    if (sent < asio::buffer_size(pieces)) {
      beast::buffers_suffix<std::array<asio::const_buffer, 2>> rest(pieces);
      rest.consume(sent);
      auto [write_ec, n] = co_await asio::async_write(s.stream, rest, kNoThrow);
      if (write_ec) {
        co_return fail(Classify(write_ec),
                       fmt::format("sending the request: {}", write_ec.message()));
      }
    }
  }
  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.header_limit(kMaxResponseHead);
  parser.body_limit(boost::none);  // the observer bounds what it keeps
  {
    auto [ec, n] = co_await bhttp::async_read_header(s.stream, s.buffer, parser, kNoThrow);
    if (ec) {
      ClientError error = Classify(ec);
      if (ec == bhttp::error::header_limit) error = ClientError::kMalformed;
      co_return fail(error, fmt::format("reading the response head: {}", ec.message()));
    }
  }
  const auto& head = parser.get();
  result.status = static_cast<int>(head.result_int());
  Headers headers;
  for (const auto& field : head) {
    headers.push_back({std::string(field.name_string()), std::string(field.value())});
  }
  observer.OnHead(result.status, headers, MonoNowNs());
  const bool keep_alive = head.keep_alive();
  // The body: parse what is buffered without I/O, hand each piece to the observer, and read
  // from the socket only when the buffer holds nothing more to parse; OnWaiting() marks that
  // moment, so a relay can send what one read brought as one write.
  parser.eager(true);
  bool body_begun = false;
  auto watch = std::make_shared<BodyWatch>();
  watch->deadline_ns = deadline_mono_ns;
  watch->idle_ns = body_idle_timeout_ns;
  struct EndWatch {
    ~EndWatch() {
      watch->active = false;
      s->body_timer.cancel();
    }
    BodyWatch* watch;
    State* s;
  } end_watch{watch.get(), &s};
  bool watching = false;
  while (!parser.is_done()) {
    parser.get().body().data = s.piece;
    parser.get().body().size = sizeof s.piece;
    beast::error_code ec;
    const size_t used = s.buffer.size() > 0 ? parser.put(s.buffer.data(), ec) : 0;
    s.buffer.consume(used);
    const size_t got = sizeof s.piece - parser.get().body().size;
    body_begun = body_begun || got > 0;
    if (got > 0 && !observer.OnBody(std::string_view(s.piece, got), MonoNowNs())) {
      co_return fail(ClientError::kAborted, "aborted by the reader");
    }
    if (ec && ec != bhttp::error::need_more && ec != bhttp::error::need_buffer) {
      co_return fail(ClientError::kMalformed,
                     fmt::format("reading the response body: {}", ec.message()));
    }
    if (parser.is_done() || used > 0 || got > 0) continue;
    if (s.buffer.size() >= kMaxBodyElement) {
      co_return fail(ClientError::kMalformed,
                     fmt::format("reading the response body: an element (a chunk header) over "
                                 "{} bytes",
                                 kMaxBodyElement));
    }
    observer.OnWaiting();
    if (body_begun && body_idle_timeout_ns > 0) watch->waiting_since_ns = MonoNowNs();
    if (!watching) {
      watching = true;
      WatchBody(s, watch);
    }
    auto [read_ec, n] =
        co_await s.stream.socket().async_read_some(s.buffer.prepare(kReadPiece), kNoThrow);
    s.buffer.commit(n);
    if (watch->expired) {
      co_return fail(ClientError::kTimeout,
                     watch->idle_expired
                         ? fmt::format("reading the response body: no byte for {} after the last",
                                       FormatDuration(body_idle_timeout_ns))
                         : std::string("reading the response body: the deadline passed"));
    }
    if (read_ec == asio::error::eof) {
      parser.put_eof(ec);  // ends a body delimited by the close; else partial_message
      if (ec)
        co_return fail(Classify(ec), fmt::format("reading the response body: {}", ec.message()));
    } else if (read_ec) {
      co_return fail(Classify(read_ec),
                     fmt::format("reading the response body: {}", read_ec.message()));
    }
  }
  if (!keep_alive) Close();
  co_return result;
}

namespace {

Result<FetchedResponse> FetchOutcome(const ClientResult& result, FetchedResponse response,
                                     const std::string& where, size_t max_body_bytes) {
  switch (result.error) {
    case ClientError::kNone:
      return response;
    case ClientError::kTimeout:
      return DeadlineExceededError(fmt::format("{}: no answer in time", where));
    case ClientError::kMalformed:
      return DataLossError(fmt::format("{}: {}", where, result.message));
    case ClientError::kAborted:
      return DataLossError(fmt::format("{}: answer over {} bytes", where, max_body_bytes));
    default:
      return UnavailableError(fmt::format("{}: {}", where, result.message));
  }
}

}  // namespace

asio::awaitable<Result<FetchedResponse>> FetchAsync(const tcp::endpoint& endpoint,
                                                    const OutgoingRequest& request,
                                                    int64_t timeout_ns, size_t max_body_bytes) {
  struct Collect : ResponseObserver {
    FetchedResponse* out;
    size_t limit;
    void OnHead(int status, const Headers& headers, int64_t) override {
      out->status = status;
      out->headers = headers;
    }
    bool OnBody(std::string_view data, int64_t) override {
      if (out->body.size() + data.size() > limit) return false;
      out->body.append(data);
      return true;
    }
  };
  FetchedResponse response;
  Collect collect;
  collect.out = &response;
  collect.limit = max_body_bytes;
  const int64_t deadline = MonoNowNs() + timeout_ns;
  auto executor = co_await asio::this_coro::executor;
  ClientConnection connection(executor);
  ClientResult result = co_await connection.Connect(endpoint, timeout_ns);
  if (result.ok()) result = co_await connection.Send(request, collect, deadline);
  const std::string where = fmt::format("http://{}{}", request.host, request.target);
  co_return FetchOutcome(result, std::move(response), where, max_body_bytes);
}

Result<FetchedResponse> Fetch(const Url& url, OutgoingRequest request, int64_t timeout_ns,
                              size_t max_body_bytes) {
  TITAN_ASSIGN_OR_RETURN(tcp::endpoint endpoint, Resolve(url));
  if (request.host.empty()) request.host = fmt::format("{}:{}", url.host, url.port);
  if (!request.target.starts_with(url.path)) request.target = url.path + request.target;
  asio::io_context context;
  std::optional<Result<FetchedResponse>> out;  // Result has no default for co_spawn's future
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        out.emplace(co_await FetchAsync(endpoint, request, timeout_ns, max_body_bytes));
      },
      asio::detached);
  context.run();
  return std::move(*out);
}

}  // namespace titan::http
