#include "src/agent/http_server.h"

#include <atomic>
#include <functional>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "src/agent/agent.h"
#include "src/agent/recorder_dump.h"
#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/text.h"
#include "src/http/server.h"
#include "src/http/work_pool.h"
#include "src/metrics/exposition.h"

namespace titan {
namespace {

namespace asio = boost::asio;

constexpr int kPoolThreads = 2;
constexpr size_t kDumpPieceBytes = 256 << 10;
constexpr int kDumpRetryAfterSeconds = 5;
constexpr std::string_view kText = "text/plain; charset=utf-8";

// A whole response, computed on the pool and sent from the loop.
struct Reply {
  int status = 200;
  std::string content_type;
  std::string body;
  http::Headers headers;
};

Reply BadRequest(std::string_view message) {
  return {400, std::string(kText), std::string(message) + "\n", {}};
}

// The server's errors for address:port in the agent's words (--listen, --port).
Status ExplainListenFailure(const Status& status, const std::string& address, int port) {
  switch (status.code()) {
    case StatusCode::kAlreadyExists:
      return AlreadyExistsError(fmt::format(
          "{}:{} is already in use (another titan agent or exporter?); stop it or pick another "
          "port with --port",
          address, port));
    case StatusCode::kPermissionDenied:
      return PermissionDeniedError(
          fmt::format("binding {}:{} needs privileges; use a port above 1023", address, port));
    case StatusCode::kInvalidArgument:
      return InvalidArgumentError(fmt::format(
          "--listen '{}' is not an IP address; use e.g. 127.0.0.1 (default) or 0.0.0.0", address));
    default:
      return status;
  }
}

Reply Metrics(const Agent& agent, const http::Request& request) {
  int64_t window = agent.options().window_seconds;
  if (const auto text = request.DecodedQueryParam("window")) {
    int64_t ns = 0;
    if (!ParseDurationNs(*text, &ns) || ns < kNsPerSecond || ns > 120 * kNsPerSecond) {
      return BadRequest("window: expected a duration between 1s and 120s, e.g. window=15s");
    }
    window = ns / kNsPerSecond;
  }
  const bool open_metrics = NegotiateFormat(http::FindHeader(request.headers, "Accept")) ==
                            ExpositionFormat::kOpenMetrics;
  return {200,
          std::string(ContentType(open_metrics ? ExpositionFormat::kOpenMetrics
                                               : ExpositionFormat::kPrometheusText)),
          agent.RenderMetrics(open_metrics, static_cast<int>(window)),
          {}};
}

Reply Events(Agent& agent, const http::Request& request) {
  int64_t after = 0, limit = 1000;
  if (const auto text = request.DecodedQueryParam("after");
      text && (!ParseInt64(*text, &after) || after < 0)) {
    return BadRequest("after: expected a non-negative event id");
  }
  if (const auto text = request.DecodedQueryParam("limit");
      text && (!ParseInt64(*text, &limit) || limit < 1 || limit > 100000)) {
    return BadRequest("limit: expected 1..100000");
  }
  std::string body = "[";
  bool first = true;
  for (const TransientEvent& e : agent.event_log().TransientsAfter(static_cast<uint64_t>(after),
                                                                   static_cast<size_t>(limit))) {
    if (!first) body += ",\n";
    first = false;
    body += TransientToJson(e);
  }
  body += "]\n";
  return {200, "application/json", std::move(body), {}};
}

Reply Health(Agent& agent) {
  nlohmann::json collectors = nlohmann::json::array();
  for (const CollectorStatus& c : agent.sampler().Statuses()) {
    collectors.push_back({{"name", c.name},
                          {"running", c.running},
                          {"interval_ms", c.interval_ns / 1e6},
                          {"rounds", c.rounds},
                          {"errors", c.errors},
                          {"stuck_seconds", c.stuck_seconds},
                          {"why_off", c.init_error}});
  }
  nlohmann::json body = {{"status", "ok"},
                         {"collectors", collectors},
                         {"series", agent.registry().series_count()},
                         {"recorder_bytes", agent.registry().recorder_bytes()},
                         {"transients", agent.event_log().transient_count()},
                         {"app_events", agent.event_log().app_event_count()}};
  return {200, "application/json", body.dump(2) + "\n", {}};
}

Reply Index() {
  return {200,
          std::string(kText),
          "titan agent\n"
          "  /metrics[?window=15s]          Prometheus / OpenMetrics (window stats + histograms)\n"
          "  /events[?after=ID&limit=N]     detected transients (JSON)\n"
          "  /recorder?last=60s[&format=perfetto|csv][&match=SUBSTR]  flight recorder dump\n"
          "  /healthz                       collectors, series, counts (JSON)\n",
          {}};
}

// /recorder's parameters, or the 400 that says which one is wrong.
std::optional<Reply> ParseDump(const http::Request& request, DumpRequest* dump,
                               DumpFormat* format) {
  const int64_t now = WallNowNs();
  dump->to_ns = now;
  dump->from_ns = now - 60 * kNsPerSecond;
  if (const auto text = request.DecodedQueryParam("last")) {
    int64_t last = 0;
    if (!ParseDurationNs(*text, &last)) {
      return BadRequest("last: expected a duration such as 60s, 500ms, 10m");
    }
    dump->from_ns = now - last;
  }
  if (const auto text = request.DecodedQueryParam("from_ns");
      text && !ParseInt64(*text, &dump->from_ns)) {
    return BadRequest("from_ns: expected integer nanoseconds since the Unix epoch");
  }
  if (const auto text = request.DecodedQueryParam("to_ns");
      text && !ParseInt64(*text, &dump->to_ns)) {
    return BadRequest("to_ns: expected integer nanoseconds since the Unix epoch");
  }
  if (dump->to_ns < dump->from_ns) return BadRequest("to_ns is before from_ns");
  dump->match = request.DecodedQueryParam("match").value_or("");
  const std::string name = request.DecodedQueryParam("format").value_or("perfetto");
  if (name == "perfetto" || name == "json") {
    *format = DumpFormat::kPerfetto;
  } else if (name == "csv") {
    *format = DumpFormat::kCsv;
  } else {
    return BadRequest("format: expected perfetto or csv");
  }
  return std::nullopt;
}

// One of the kMaxConcurrentDumps places, held while a dump streams.
class DumpSlot {
 public:
  explicit DumpSlot(std::atomic<int>* active)
      : active_(active), held_(active->fetch_add(1) < HttpServer::kMaxConcurrentDumps) {
    if (!held_) active_->fetch_sub(1);
  }
  ~DumpSlot() {
    if (held_) active_->fetch_sub(1);
  }
  DumpSlot(const DumpSlot&) = delete;
  DumpSlot& operator=(const DumpSlot&) = delete;
  bool held() const { return held_; }

 private:
  std::atomic<int>* active_;
  bool held_;
};

}  // namespace

struct HttpServer::Impl {
  explicit Impl(Agent* a) : agent(a), pool(kPoolThreads) {}

  asio::awaitable<void> Handle(http::Exchange& exchange);
  asio::awaitable<void> ServeRecorder(http::Exchange& exchange);

  Agent* agent;
  http::WorkPool pool;
  std::atomic<int> active_dumps{0};
  std::unique_ptr<http::Server> server;  // last: stopped before the pool and state above go
};

asio::awaitable<void> HttpServer::Impl::Handle(http::Exchange& exchange) {
  const http::Request& request = exchange.request();
  const std::string_view path = request.path();
  if (request.method == "GET" && path == "/recorder") {
    co_await ServeRecorder(exchange);
    co_return;
  }
  // What takes the agent's locks runs on the pool (see the header's thread-safety contract).
  Reply reply;
  std::function<Reply()> work;
  if (request.method != "GET") {
    reply = {405, std::string(kText), "only GET is served\n", {{"Allow", "GET"}}};
  } else if (path == "/metrics") {
    work = [this, &request] { return Metrics(*agent, request); };
  } else if (path == "/events") {
    work = [this, &request] { return Events(*agent, request); };
  } else if (path == "/healthz") {
    work = [this] { return Health(*agent); };
  } else if (path == "/") {
    reply = Index();
  } else {
    reply = {404, std::string(kText), "no such path; GET / lists them\n", {}};
  }
  if (work) {
    // Named, not a temporary: GCC 12 mishandles temporaries in co_await expressions.
    asio::awaitable<Reply> job = pool.Run(std::move(work));
    reply = co_await std::move(job);
  }
  co_await exchange.Respond(reply.status, reply.content_type, std::move(reply.body), reply.headers);
}

asio::awaitable<void> HttpServer::Impl::ServeRecorder(http::Exchange& exchange) {
  DumpRequest dump;
  DumpFormat format = DumpFormat::kPerfetto;
  if (std::optional<Reply> bad = ParseDump(exchange.request(), &dump, &format)) {
    co_await exchange.Respond(bad->status, bad->content_type, std::move(bad->body));
    co_return;
  }
  DumpSlot slot(&active_dumps);
  if (!slot.held()) {
    std::string error = http::JsonError(
        fmt::format("{} recorder dumps are being streamed, the most the agent serves at once "
                    "(each holds memory while it lasts); retry in {} s",
                    kMaxConcurrentDumps, kDumpRetryAfterSeconds),
        "overloaded", 503);
    const http::Headers retry = {{"Retry-After", std::to_string(kDumpRetryAfterSeconds)}};
    co_await exchange.Respond(503, "application/json", std::move(error), retry);
    co_return;
  }
  // Shared with the job that renders the next piece.
  auto renderer =
      std::make_shared<DumpRenderer>(agent->registry(), &agent->event_log(), dump, format);
  http::Headers headers;
  if (format == DumpFormat::kPerfetto) {
    headers.push_back({"Content-Disposition", "attachment; filename=\"titan-recorder.json\""});
  }
  if (!co_await exchange.BeginStream(
          200, format == DumpFormat::kPerfetto ? "application/json" : "text/csv", headers)) {
    co_return;
  }
  for (;;) {
    // Named, not a temporary: GCC 12 mishandles temporaries in co_await expressions.
    asio::awaitable<std::string> job = pool.Run([renderer] {
      std::string out;
      out.reserve(kDumpPieceBytes + 4096);
      renderer->Next(kDumpPieceBytes, &out);
      return out;
    });
    std::string piece = co_await std::move(job);
    if (piece.empty()) break;
    if (!co_await exchange.Write(piece)) co_return;  // the client left: stop rendering
  }
  co_await exchange.EndStream();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (!impl_->server) return;
  // The pool first: its last results go to the loop, which must still run (WorkPool's contract).
  // A dump in progress is cut off without its last chunk, so that its client sees it incomplete.
  impl_->pool.Close();
  impl_->server->Stop();
  impl_->server.reset();
}

int HttpServer::port() const { return impl_->server ? impl_->server->port() : 0; }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(Agent* agent, const std::string& address,
                                                      int port) {
  std::unique_ptr<HttpServer> http(new HttpServer(std::make_unique<Impl>(agent)));
  http::ServerOptions options;
  options.address = address;
  options.port = port;
  options.threads = 1;
  options.max_header_bytes = 16 << 10;
  options.max_body_bytes = 64 << 10;
  options.request_timeout_ns = 10 * kNsPerSecond;
  options.idle_timeout_ns = 60 * kNsPerSecond;
  options.write_timeout_ns = 30 * kNsPerSecond;
  options.max_connections = kMaxConnections;
  Impl* impl = http->impl_.get();
  auto server = http::Server::Start(
      options, [impl](http::Exchange& exchange) { return impl->Handle(exchange); });
  if (!server.ok()) return ExplainListenFailure(server.status(), address, port);
  impl->server = std::move(*server);
  return http;
}

}  // namespace titan
