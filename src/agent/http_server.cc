#include "src/agent/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "src/agent/agent.h"
#include "src/agent/recorder_dump.h"
#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/listen_socket.h"
#include "src/base/text.h"
#include "src/metrics/exposition.h"

namespace titan {
namespace {

// Why binding address:port fails, from a probe socket (cpp-httplib reports only a bool).
Status ExplainBindFailure(const std::string& address, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError(errno, "creating a probe socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    close(fd);
    return InvalidArgumentError(fmt::format(
        "--listen '{}' is not an IPv4 address; use e.g. 127.0.0.1 (default) or 0.0.0.0", address));
  }
  int error = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) error = errno;
  close(fd);
  if (error == EADDRINUSE) {
    return AlreadyExistsError(fmt::format(
        "{}:{} is already in use (another titan agent or exporter?); stop it or pick another "
        "port with --port",
        address, port));
  }
  if (error == EACCES) {
    return PermissionDeniedError(
        fmt::format("binding {}:{} needs privileges; use a port above 1023", address, port));
  }
  return UnavailableError(fmt::format("cannot listen on {}:{}{}", address, port,
                                      error ? std::string(": ") + strerror(error) : ""));
}

void BadRequest(httplib::Response& res, const std::string& message) {
  res.status = 400;
  res.set_content(message + "\n", "text/plain; charset=utf-8");
}

}  // namespace

HttpServer::HttpServer(Agent* agent) : agent_(agent), server_(std::make_unique<httplib::Server>()) {
  server_->set_socket_options(SetListenSocketOptions);
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (!thread_.joinable()) return;
  // cpp-httplib's stop() does nothing until its listen loop runs (is_running()): a Stop() right
  // after Start() (the event socket failing at start-up) left the thread in accept() for ever
  // and join() hung. Wait for the loop (bounded: a thread that already returned never runs it).
  for (int i = 0; i < 2000 && !server_->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server_->stop();
  thread_.join();
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(Agent* agent, const std::string& address,
                                                      int port) {
  std::unique_ptr<HttpServer> http(new HttpServer(agent));
  http->Routes();
  if (port == 0) {
    http->port_ = http->server_->bind_to_any_port(address);
    if (http->port_ <= 0) return ExplainBindFailure(address, 0);
  } else {
    if (!http->server_->bind_to_port(address, port)) return ExplainBindFailure(address, port);
    http->port_ = port;
  }
  http->thread_ = std::thread([server = http->server_.get()] { server->listen_after_bind(); });
  return http;
}

void HttpServer::Routes() {
  httplib::Server& s = *server_;
  s.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    int64_t window = agent_->options().window_seconds;
    if (req.has_param("window")) {
      int64_t ns = 0;
      if (!ParseDurationNs(req.get_param_value("window"), &ns) || ns < kNsPerSecond ||
          ns > 120 * kNsPerSecond) {
        return BadRequest(res, "window: expected a duration between 1s and 120s, e.g. window=15s");
      }
      window = ns / kNsPerSecond;
    }
    const bool open_metrics =
        NegotiateFormat(req.get_header_value("Accept")) == ExpositionFormat::kOpenMetrics;
    res.set_content(agent_->RenderMetrics(open_metrics, static_cast<int>(window)),
                    std::string(ContentType(open_metrics ? ExpositionFormat::kOpenMetrics
                                                         : ExpositionFormat::kPrometheusText)));
  });

  s.Get("/events", [this](const httplib::Request& req, httplib::Response& res) {
    int64_t after = 0, limit = 1000;
    if (req.has_param("after") &&
        (!ParseInt64(req.get_param_value("after"), &after) || after < 0)) {
      return BadRequest(res, "after: expected a non-negative event id");
    }
    if (req.has_param("limit") &&
        (!ParseInt64(req.get_param_value("limit"), &limit) || limit < 1 || limit > 100000)) {
      return BadRequest(res, "limit: expected 1..100000");
    }
    std::string body = "[";
    bool first = true;
    for (const TransientEvent& e : agent_->event_log().TransientsAfter(
             static_cast<uint64_t>(after), static_cast<size_t>(limit))) {
      if (!first) body += ",\n";
      first = false;
      body += TransientToJson(e);
    }
    body += "]\n";
    res.set_content(body, "application/json");
  });

  s.Get("/recorder", [this](const httplib::Request& req, httplib::Response& res) {
    DumpRequest dump;
    const int64_t now = WallNowNs();
    dump.to_ns = now;
    dump.from_ns = now - 60 * kNsPerSecond;
    if (req.has_param("last")) {
      int64_t last = 0;
      if (!ParseDurationNs(req.get_param_value("last"), &last)) {
        return BadRequest(res, "last: expected a duration such as 60s, 500ms, 10m");
      }
      dump.from_ns = now - last;
    }
    if (req.has_param("from_ns") && !ParseInt64(req.get_param_value("from_ns"), &dump.from_ns)) {
      return BadRequest(res, "from_ns: expected integer nanoseconds since the Unix epoch");
    }
    if (req.has_param("to_ns") && !ParseInt64(req.get_param_value("to_ns"), &dump.to_ns)) {
      return BadRequest(res, "to_ns: expected integer nanoseconds since the Unix epoch");
    }
    if (dump.to_ns < dump.from_ns) return BadRequest(res, "to_ns is before from_ns");
    dump.match = req.get_param_value("match");
    const std::string format = req.has_param("format") ? req.get_param_value("format") : "perfetto";
    std::string body;
    if (format == "perfetto" || format == "json") {
      RenderPerfettoDump(agent_->registry(), agent_->event_log(), dump, &body);
      res.set_header("Content-Disposition", "attachment; filename=\"titan-recorder.json\"");
      res.set_content(body, "application/json");
    } else if (format == "csv") {
      RenderCsvDump(agent_->registry(), dump, &body);
      res.set_content(body, "text/csv");
    } else {
      BadRequest(res, "format: expected perfetto or csv");
    }
  });

  s.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json collectors = nlohmann::json::array();
    for (const CollectorStatus& c : agent_->sampler().Statuses()) {
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
                           {"series", agent_->registry().series_count()},
                           {"recorder_bytes", agent_->registry().recorder_bytes()},
                           {"transients", agent_->event_log().transient_count()},
                           {"app_events", agent_->event_log().app_event_count()}};
    res.set_content(body.dump(2) + "\n", "application/json");
  });

  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        "titan agent\n"
        "  /metrics[?window=15s]          Prometheus / OpenMetrics (window stats + histograms)\n"
        "  /events[?after=ID&limit=N]     detected transients (JSON)\n"
        "  /recorder?last=60s[&format=perfetto|csv][&match=SUBSTR]  flight recorder dump\n"
        "  /healthz                       collectors, series, counts (JSON)\n",
        "text/plain; charset=utf-8");
  });
}

}  // namespace titan
