// The gateway in-process in front of real serve-sim replicas (also in-process, each on its own
// ephemeral port), driven over loopback sockets by titan's HTTP client. No timing upper bounds:
// waits poll for a condition with a generous deadline.
#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/gateway/gateway.h"
#include "src/http/chunked_for_tests.h"
#include "src/http/client.h"
#include "src/serve_sim/server.h"

namespace titan::gateway {
namespace {

using nlohmann::json;

std::unique_ptr<serve_sim::ServeSim> StartReplica(int64_t itl_ns = kNsPerMs, int max_seqs = 64) {
  serve_sim::ServeSimOptions options;
  options.engine.itl_base_ns = itl_ns;
  options.engine.prefill_overhead_ns = kNsPerMs;
  options.engine.prefill_per_token_ns = kNsPerUs;
  options.engine.max_num_seqs = max_seqs;
  auto server = serve_sim::ServeSim::Start(options);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::string UrlOf(int port) { return "http://127.0.0.1:" + std::to_string(port); }

GatewayConfig BaseConfig(const std::vector<int>& ports) {
  GatewayConfig c;
  c.listen_port = 0;
  for (int p : ports) c.replicas.push_back({UrlOf(p), "default"});
  c.health.interval_ns = 100 * kNsPerMs;
  c.health.warmup_requests = 1;
  c.outlier.slow_start_ns = 0;
  c.scrape_interval_ns = 100 * kNsPerMs;
  return c;
}

bool WaitFor(const std::function<bool()>& done, int64_t timeout_ns = 20 * kNsPerSecond) {
  const int64_t deadline = MonoNowNs() + timeout_ns;
  while (MonoNowNs() < deadline) {
    if (done()) return true;
    SleepUntilMonoNs(MonoNowNs() + 10 * kNsPerMs);
  }
  return done();
}

std::unique_ptr<Gateway> StartGateway(const GatewayConfig& config, size_t ready = 0) {
  auto gateway = Gateway::Start(config);
  EXPECT_TRUE(gateway.ok()) << gateway.status().ToString();
  if (!gateway.ok()) return nullptr;
  std::unique_ptr<Gateway> g = std::move(gateway).value();
  const size_t want = ready ? ready : config.replicas.size();
  EXPECT_TRUE(WaitFor([&] {
    size_t n = 0;
    for (const ReplicaSnapshot& r : g->Replicas()) n += r.state == "ready";
    return n >= want;
  })) << "replicas did not become ready";
  return g;
}

http::FetchedResponse Post(int port, const std::string& path, const std::string& body,
                           http::Headers headers = {}) {
  http::OutgoingRequest req;
  req.target = path;
  req.body = body;
  req.headers = std::move(headers);
  req.headers.push_back({"Content-Type", "application/json"});
  auto url = http::ParseUrl(UrlOf(port));
  auto got = http::Fetch(*url, req, 60 * kNsPerSecond);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  return got.ok() ? *got : http::FetchedResponse{};
}

http::FetchedResponse Get(int port, const std::string& path) {
  http::OutgoingRequest req;
  req.method = "GET";
  req.target = path;
  auto got = http::Fetch(*http::ParseUrl(UrlOf(port)), req, 30 * kNsPerSecond);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  return got.ok() ? *got : http::FetchedResponse{};
}

std::string Completion(int max_tokens, bool stream) {
  return json({{"prompt", "one two three four"},
               {"max_tokens", max_tokens},
               {"stream", stream},
               {"ignore_eos", true}})
      .dump();
}

int CountEvents(const std::string& sse) {
  int n = 0;
  for (size_t at = sse.find("data: "); at != std::string::npos; at = sse.find("data: ", at + 1)) {
    ++n;
  }
  return n;
}

TEST(GatewayProxyTest, RelaysStreamsAndWholeAnswers) {
  auto a = StartReplica(), b = StartReplica();
  auto g = StartGateway(BaseConfig({a->port(), b->port()}));
  ASSERT_NE(g, nullptr);
  http::FetchedResponse whole = Post(g->port(), "/v1/completions", Completion(5, false));
  ASSERT_EQ(whole.status, 200) << whole.body;
  json doc = json::parse(whole.body);
  EXPECT_EQ(doc["usage"]["completion_tokens"], 5);
  EXPECT_FALSE(http::FindHeader(whole.headers, "X-Request-Id").empty());
  http::FetchedResponse stream =
      Post(g->port(), "/v1/completions", Completion(7, true), {{"X-Request-Id", "my-id-1"}});
  ASSERT_EQ(stream.status, 200);
  EXPECT_EQ(CountEvents(stream.body), 8) << stream.body;  // 7 tokens + [DONE]
  EXPECT_NE(stream.body.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(http::FindHeader(stream.headers, "X-Request-Id"), "my-id-1");
  EXPECT_EQ(Get(g->port(), "/healthz").status, 200);
  const std::string metrics = Get(g->port(), "/metrics").body;
  EXPECT_NE(metrics.find("titan_gateway_requests_total{code=\"2xx\"} 2"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("titan_gateway_queue_depth_window_max{class=\"default\"}"),
            std::string::npos);
  const GatewayCounters c = g->Counters();
  EXPECT_EQ(c.requests, 2u);
  EXPECT_EQ(c.admitted, 2u);
  EXPECT_EQ(c.in_flight, 0u);
}

TEST(GatewayProxyTest, BadInputGetsAClearErrorNamingTheLimit) {
  auto a = StartReplica();
  GatewayConfig config = BaseConfig({a->port()});
  config.limits.max_tokens = 100;
  config.limits.max_body_bytes = 4096;
  config.limits.max_prompt_tokens = 50;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  auto expect = [&](const std::string& body, int status, const std::string& words) {
    http::FetchedResponse r = Post(g->port(), "/v1/completions", body);
    EXPECT_EQ(r.status, status) << body << " -> " << r.body;
    EXPECT_NE(r.body.find(words), std::string::npos) << r.body;
  };
  expect("{\"prompt\": \"x\", ", 400, "not valid JSON");
  expect("{\"prompt\": \"\xff\xfe\"}", 400, "UTF-8");
  expect(R"({"prompt":"x","n":2})", 400, "limits.max_n");
  expect(R"({"prompt":"x","max_tokens":101})", 400, "limits.max_tokens");
  expect(json({{"prompt", std::string(1000, 'a')}}).dump(), 400, "limits.max_prompt_tokens");
  expect(json({{"prompt", std::string(5000, 'a')}}).dump(), 413, "4096 bytes");
  EXPECT_EQ(Get(g->port(), "/nope").status, 404);
  EXPECT_EQ(Get(g->port(), "/v1/completions").status, 405);
  // The read-only endpoints take GET (a DELETE of /admin/replicas answered 200 with the list).
  for (const char* path : {"/admin/replicas", "/healthz", "/metrics"}) {
    http::FetchedResponse r = Post(g->port(), path, "{}");
    EXPECT_EQ(r.status, 405) << path;
    EXPECT_EQ(http::FindHeader(r.headers, "Allow"), "GET") << path;
  }
  // A deadline is a whole number of milliseconds: a number with anything after it is refused,
  // not read as its leading digits ("1e300" was 1 ms, "1abc" too).
  for (const char* deadline : {"soon", "1abc", "1e300", "0", "86400001"}) {
    http::FetchedResponse bad_deadline = Post(g->port(), "/v1/completions", Completion(1, false),
                                              {{"x-titan-deadline-ms", deadline}});
    EXPECT_EQ(bad_deadline.status, 400) << deadline;
    EXPECT_NE(bad_deadline.body.find("x-titan-deadline-ms"), std::string::npos) << deadline;
  }
  // Nothing of this reached the replica or stayed in flight.
  EXPECT_EQ(a->engine_stats().finished_length, 1u);  // the warm-up only
  EXPECT_EQ(g->Counters().invalid, 10u);
}

// A replica that passes its health checks and answers every API request with `answer` (then
// closes the connection): bytes that are not HTTP, a cut-off body, an error status.
// Answers every request but health checks with `answer`, then closes the connection, or with
// `hold_open` keeps it open and silent until the replica is destroyed.
class ScriptedReplica {
 public:
  explicit ScriptedReplica(std::string answer, bool hold_open = false)
      : answer_(std::move(answer)), hold_open_(hold_open) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    listen(fd_, 64);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedReplica() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
    for (int c : held_) close(c);
  }
  int port() const { return port_; }

 private:
  void Serve() {
    for (;;) {
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = read(c, buffer, sizeof(buffer));
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
      }
      const std::string& answer = request.starts_with("GET /health") ? kHealthy
                                  : request.empty()                  ? kNone
                                                                     : answer_;
      // The gateway may close first (an answer it cuts off): no SIGPIPE for this process.
      ssize_t ignored = send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
      (void)ignored;
      if (hold_open_ && &answer == &answer_) {
        held_.push_back(c);
      } else {
        close(c);
      }
    }
  }
  inline static const std::string kHealthy =
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
  inline static const std::string kNone;
  const std::string answer_;
  const bool hold_open_;
  std::vector<int> held_;  // connections held open (Serve's thread only, then the destructor)
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// A replica answering bytes that are not HTTP, or a whole answer cut off before its
// Content-Length (which was relayed as a 200 with what arrived): a clear 502, counted.
TEST(GatewayProxyTest, AReplicaAnsweringGarbageOrACutOffBodyGetsAClear502AndIsCounted) {
  // Garbage; a head and half an event; a head, a whole event (a token) and half another.
  const std::string kToken = "data: {\"choices\":[{\"index\":0,\"text\":\"Hi\"}]}\n\n";
  for (const std::string& answer :
       {std::string("this is not HTTP at all\r\n\r\n"),
        std::string("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                    "1000\r\n\r\n{\"choices\":["),
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n" +
            kToken + "{\"choices\":["}) {
    ScriptedReplica bad(answer);
    GatewayConfig config = BaseConfig({bad.port()});
    config.retries = 0;
    auto g = StartGateway(config);
    ASSERT_NE(g, nullptr);
    const bool has_token = answer.find(kToken) != std::string::npos;
    for (bool stream : {false, true}) {
      http::FetchedResponse r = Post(g->port(), "/v1/completions", Completion(3, stream));
      // Nothing goes to a client before the first token: a stream cut before it is a 502 like a
      // whole answer; one cut after it ends with an upstream_error event (docs/gateway.md).
      EXPECT_EQ(r.status, stream && has_token ? 200 : 502) << answer << "\n" << r.body;
      EXPECT_NE(r.body.find("upstream_error"), std::string::npos) << r.body;
      // The event the gateway adds after a half-relayed one starts on a line of its own.
      if (stream && has_token) {
        EXPECT_NE(r.body.find("[\n\ndata: {\"error\""), std::string::npos) << r.body;
      }
    }
    EXPECT_NE(g->Metrics().find("titan_gateway_upstream_errors_total{replica=\"" +
                                UrlOf(bad.port()) + "\"} 2"),
              std::string::npos)
        << g->Metrics();
    EXPECT_EQ(g->Counters().in_flight, 0u);
  }
}

// Sends a streamed completion request on a new raw connection whose receive buffer is small
// (64 KiB: what the kernel buffers for it stays far below the relay's 8 MiB bound) and reads
// nothing: the connection's descriptor, or -1.
int SendStreamedCompletion(int port) {
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  const int small = 64 << 10;
  setsockopt(client, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(client);
    return -1;
  }
  const std::string body = Completion(3, true);
  const std::string request =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  if (send(client, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(client);
    return -1;
  }
  return client;
}

// A replica's whole answer: `events` as a text/event-stream body with a Content-Length.
std::string EventStreamAnswer(const std::string& events) {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
         std::to_string(events.size()) + "\r\n\r\n" + events;
}

GatewayConfig NoRetries(GatewayConfig config) {
  config.retries = 0;
  return config;
}

// Everything `fd` delivers until the peer closes; closes `fd`.
std::string ReadToEnd(int fd) {
  std::string received;
  char buffer[1 << 16];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) {
    received.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return received;
}

// A large stream to a client that reads late and slowly but stays within the relay's bound
// arrives whole and in order: bytes the client's socket took only part of (the relay sends
// from the upstream reader when the socket takes them at once) go out before later ones.
TEST(GatewayProxyTest, AStreamToAClientThatReadsLateArrivesWholeAndInOrder) {
  std::string events;
  for (int i = 0; events.size() < (4u << 20); ++i) {
    events += fmt::format("data: {{\"choices\":[{{\"text\":\"{} {}\",\"index\":0}}]}}\n\n", i,
                          std::string(static_cast<size_t>(i % 997), 'x'));
  }
  ScriptedReplica fast(EventStreamAnswer(events));
  auto g = StartGateway(NoRetries(BaseConfig({fast.port()})));
  ASSERT_NE(g, nullptr);
  const int client = SendStreamedCompletion(g->port());
  ASSERT_GE(client, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the relay fills the socket
  const std::string received = ReadToEnd(client);
  EXPECT_TRUE(received.starts_with("HTTP/1.1 200")) << received.substr(0, 200);
  const std::optional<std::string> body = http::DecodeChunkedForTests(received);
  ASSERT_TRUE(body.has_value()) << "the chunked body was cut off or malformed";
  EXPECT_EQ(body->size(), events.size());
  EXPECT_TRUE(*body == events) << "the relayed stream differs from the replica's";
  EXPECT_EQ(g->Counters().client_behind, 0u);
}

// A client that stops reading its stream while the replica keeps sending: once it is more than
// the relay bound behind, it is cut off (its chunked body never ends, so it cannot mistake
// what it got for the whole answer). That is the client's doing: the replica stays ready and no
// upstream error is counted (it was, and a few such clients ejected a healthy replica).
TEST(GatewayProxyTest, AClientThatReadsTooSlowlyIsCutOffWithoutBlamingTheReplica) {
  std::string events;
  const std::string event =
      "data: {\"choices\":[{\"text\":\"" + std::string(1000, 'x') + "\",\"index\":0}]}\n\n";
  while (events.size() < (40u << 20)) events += event;
  ScriptedReplica fast(EventStreamAnswer(events));
  auto g = StartGateway(NoRetries(BaseConfig({fast.port()})));
  ASSERT_NE(g, nullptr);

  const int client = SendStreamedCompletion(g->port());
  ASSERT_GE(client, 0);
  // Reads nothing until the gateway has given up on it.
  EXPECT_TRUE(WaitFor([&] { return g->Counters().client_behind == 1; }))
      << "client_behind " << g->Counters().client_behind;
  const std::string received = ReadToEnd(client);
  EXPECT_TRUE(received.starts_with("HTTP/1.1 200")) << received.substr(0, 200);
  EXPECT_LT(received.size(), events.size());
  EXPECT_FALSE(received.ends_with("\r\n0\r\n\r\n"))
      << received.substr(received.size() > 400 ? received.size() - 400 : 0);
  EXPECT_EQ(g->Metrics().find("titan_gateway_upstream_errors_total{replica=\"" +
                              UrlOf(fast.port()) + "\"} 1"),
            std::string::npos)
      << g->Metrics();
  EXPECT_EQ(g->Replicas()[0].state, "ready");
  EXPECT_EQ(g->Counters().in_flight, 0u);
}

// A whole answer over the gateway's 64 MiB bound: a 502 that names the bound, and no failure of
// the replica (it was counted as one, so a few large embeddings batches ejected it).
TEST(GatewayProxyTest, AWholeAnswerOverTheBoundIsA502ThatDoesNotBlameTheReplica) {
  std::string body = "{\"data\":[\"" + std::string(70u << 20, 'x') + "\"]}";
  ScriptedReplica large("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body);
  body.clear();
  GatewayConfig config = BaseConfig({large.port()});
  config.retries = 0;
  config.health.warmup_requests = 0;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  http::FetchedResponse r = Post(g->port(), "/v1/completions", Completion(3, false));
  EXPECT_EQ(r.status, 502);
  EXPECT_NE(r.body.find("bound on a whole answer"), std::string::npos) << r.body;
  EXPECT_EQ(g->Metrics().find("titan_gateway_upstream_errors_total{replica=\"" +
                              UrlOf(large.port()) + "\"} 1"),
            std::string::npos)
      << g->Metrics();
  EXPECT_EQ(g->Replicas()[0].state, "ready");
}

// A replica that sends one event and then goes silent, holding the connection: the client gets
// the mid-stream error after upstream_idle_timeout, not after upstream_timeout (10 minutes).
TEST(GatewayProxyTest, AReplicaSilentMidStreamFailsTheStreamAfterTheIdleTimeout) {
  const std::string event = "data: {\"choices\":[{\"text\":\"a\",\"index\":0}]}\n\n";
  ScriptedReplica silent(fmt::format("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                     "Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n",
                                     event.size(), event),
                         /*hold_open=*/true);
  GatewayConfig config = BaseConfig({silent.port()});
  config.retries = 0;
  config.upstream_idle_timeout_ns = 300 * kNsPerMs;
  config.health.warmup_requests = 0;  // a warm-up would wait on the silent replica for 60 s
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  http::FetchedResponse r = Post(g->port(), "/v1/completions", Completion(3, true));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body.starts_with(event)) << r.body;
  EXPECT_NE(r.body.find("no byte for 300ms"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("upstream_error"), std::string::npos) << r.body;
}

// A retry with no other ready replica fails at once (502); it does not wait in the queue, and
// the requests after it are not stuck behind it.
TEST(GatewayRetryTest, ARetryWithNowhereElseToGoFailsAtOnceAndBlocksNoOne) {
  ScriptedReplica failing(
      "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
      "Content-Length: 2\r\n\r\n{}");
  GatewayConfig config = BaseConfig({failing.port()});
  config.retries = 1;
  config.admission.queue_timeout_ns = 2 * kNsPerSecond;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  for (int i = 0; i < 3; ++i) {
    http::FetchedResponse r = Post(g->port(), "/v1/completions", Completion(3, false));
    EXPECT_EQ(r.status, 502) << "request " << i << ": " << r.body;
    EXPECT_NE(r.body.find("every replica tried failed"), std::string::npos) << r.body;
  }
  EXPECT_EQ(g->Counters().in_flight, 0u);
}

TEST(GatewayAdmissionTest, AFullQueueGets429WithRetryAfter) {
  auto a = StartReplica(20 * kNsPerMs);  // 50 tokens: about 1 s per request
  GatewayConfig config = BaseConfig({a->port()});
  config.admission.max_inflight_per_replica = 1;
  for (PriorityClass& pc : config.admission.classes) pc.max_queue = 1;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  std::atomic<int> ok{0}, limited{0}, retry_after{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] {
      http::FetchedResponse r = Post(g->port(), "/v1/completions", Completion(50, true));
      if (r.status == 200) ++ok;
      if (r.status == 429) {
        ++limited;
        if (!http::FindHeader(r.headers, "Retry-After").empty()) ++retry_after;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 2);  // one seated, one queued
  EXPECT_EQ(limited.load(), 2);
  EXPECT_EQ(retry_after.load(), 2);
  EXPECT_EQ(g->Counters().shed, 2u);
  EXPECT_NE(g->Metrics().find("titan_gateway_rejections_total{reason=\"queue_full\"} 2"),
            std::string::npos);
}

// Sends `request` on a new raw socket and returns the socket, left open (-1 on failure).
int SendRaw(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

bool QueueHolds(Gateway& g, int waiting) {
  const std::string metrics = g.Metrics();
  for (size_t at = metrics.find("\ntitan_gateway_queue_depth{"); at != std::string::npos;
       at = metrics.find("\ntitan_gateway_queue_depth{", at + 1)) {
    const size_t end = metrics.find('\n', at + 1);
    if (metrics.substr(at, end - at).ends_with(" " + std::to_string(waiting))) return true;
  }
  return false;
}

// A client that leaves before its whole (non-streamed) answer gives up its seat, its queue
// place and its replica's work at once: a probe's fire-and-forget clients held all three until
// each answer ended (the replica generated every token for nobody).
TEST(GatewayAdmissionTest, AClientThatLeavesGivesUpItsSeatQueuePlaceAndUpstreamWork) {
  auto a = StartReplica(5 * kNsPerMs);  // 5000 tokens: 25 s
  GatewayConfig config = BaseConfig({a->port()});
  config.admission.max_inflight_per_replica = 1;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  const std::string body = Completion(5000, false);
  const std::string request = fmt::format(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\n\r\n{}",
      body.size(), body);
  const int seated = SendRaw(g->port(), request);
  ASSERT_GE(seated, 0);
  ASSERT_TRUE(WaitFor([&] { return a->engine_stats().running == 1; }));
  const int queued = SendRaw(g->port(), request);
  ASSERT_GE(queued, 0);
  ASSERT_TRUE(WaitFor([&] { return QueueHolds(*g, 1); })) << g->Metrics();
  close(queued);
  EXPECT_TRUE(WaitFor([&] { return QueueHolds(*g, 0); })) << g->Metrics();
  EXPECT_EQ(a->engine_stats().running, 1);  // the seated one is still served
  close(seated);
  EXPECT_TRUE(WaitFor([&] { return a->engine_stats().running == 0; }));
  EXPECT_EQ(a->engine_stats().aborted, 1u);
  EXPECT_TRUE(WaitFor([&] { return g->Counters().in_flight == 0; }));
  EXPECT_EQ(g->Counters().client_gone, 2u);
  // The seat is free again.
  EXPECT_EQ(Post(g->port(), "/v1/completions", Completion(2, false)).status, 200);
}

TEST(GatewayAdmissionTest, ExpiredDeadlinesAreShedAndNoReplicaGets503) {
  auto a = StartReplica(20 * kNsPerMs);
  GatewayConfig config = BaseConfig({a->port()});
  config.admission.max_inflight_per_replica = 1;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  std::thread busy([&] { Post(g->port(), "/v1/completions", Completion(50, false)); });
  ASSERT_TRUE(WaitFor([&] { return g->Counters().in_flight == 1; }));
  // Waits 100 ms at most for a seat that frees in about a second.
  http::FetchedResponse late =
      Post(g->port(), "/v1/completions", Completion(1, false), {{"x-titan-deadline-ms", "100"}});
  EXPECT_EQ(late.status, 429) << late.body;
  busy.join();
  a->Stop();
  ASSERT_TRUE(WaitFor([&] { return g->Replicas()[0].state != "ready"; }));
  http::FetchedResponse none = Post(g->port(), "/v1/completions", Completion(1, false));
  EXPECT_EQ(none.status, 503) << none.body;
  EXPECT_EQ(Get(g->port(), "/healthz").status, 503);
}

TEST(GatewayAdmissionTest, ATokenBudgetKeepsTwoLargeRequestsApart) {
  auto a = StartReplica(10 * kNsPerMs);
  GatewayConfig config = BaseConfig({a->port()});
  config.admission.token_budget_per_replica = 100;  // one request of 4 + 60 tokens fits
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  std::atomic<int> ok{0};
  std::atomic<uint64_t> most_in_flight{0};
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done) {
      most_in_flight = std::max<uint64_t>(most_in_flight, g->Counters().in_flight);
      SleepUntilMonoNs(MonoNowNs() + 2 * kNsPerMs);
    }
  });
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&] {
      if (Post(g->port(), "/v1/completions", Completion(60, true)).status == 200) ++ok;
    });
  }
  for (auto& t : clients) t.join();
  done = true;
  watcher.join();
  EXPECT_EQ(ok.load(), 3);
  EXPECT_EQ(most_in_flight.load(), 1u);  // 8 seats, but the budget holds one at a time
}

TEST(GatewayAdmissionTest, TheAdaptiveLimitShrinksWhileTtftIsOverTarget) {
  auto a = StartReplica(20 * kNsPerMs, /*max_seqs=*/2);  // 2 seats: the rest queue inside
  GatewayConfig config = BaseConfig({a->port()});
  config.admission.max_inflight_per_replica = 16;
  config.admission.adaptive = true;
  config.admission.min_inflight = 2;
  config.admission.target_ttft_ns = 50 * kNsPerMs;
  config.outlier.interval_ns = 200 * kNsPerMs;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int i = 0; i < 12; ++i) {
    clients.emplace_back([&] {
      while (!stop) Post(g->port(), "/v1/completions", Completion(10, true));
    });
  }
  const bool shrunk = WaitFor([&] { return g->Replicas()[0].limit == 2; });
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_TRUE(shrunk) << "limit " << g->Replicas()[0].limit;
}

TEST(GatewayRetryTest, RequestsToADeadReplicaAreRetriedElsewhereAndItIsEjected) {
  auto a = StartReplica(), b = StartReplica();
  GatewayConfig config = BaseConfig({a->port(), b->port()});
  config.health.interval_ns = 60 * kNsPerSecond;  // only request failures can eject here
  config.outlier.consecutive_failures = 2;
  config.routing.policy = RoutingPolicy::kRoundRobin;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  b->Stop();
  for (int i = 0; i < 10; ++i) {
    http::FetchedResponse r = Post(g->port(), "/v1/completions", Completion(3, i % 2 == 0));
    EXPECT_EQ(r.status, 200) << r.body;
  }
  const GatewayCounters c = g->Counters();
  EXPECT_GE(c.retries, 2u);
  EXPECT_EQ(c.ejections, 1u);
  std::vector<ReplicaSnapshot> replicas = g->Replicas();
  EXPECT_EQ(replicas[1].state, "ejected");
  EXPECT_EQ(replicas[0].state, "ready");
}

TEST(GatewayOutlierTest, ASlowReplicaIsEjectedAndItsTrafficMoves) {
  auto a = StartReplica(2 * kNsPerMs), b = StartReplica(2 * kNsPerMs),
       slow = StartReplica(2 * kNsPerMs);
  GatewayConfig config = BaseConfig({a->port(), b->port(), slow->port()});
  config.outlier.interval_ns = 300 * kNsPerMs;
  config.outlier.min_requests = 2;
  config.outlier.base_ejection_ns = 60 * kNsPerSecond;
  config.routing.policy = RoutingPolicy::kRoundRobin;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  http::FetchedResponse fault = Post(slow->port(), "/admin/fault", R"({"slow":5})");
  ASSERT_EQ(fault.status, 200) << fault.body;
  std::atomic<bool> stop{false};
  std::atomic<int> failed{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([&] {
      while (!stop) {
        if (Post(g->port(), "/v1/completions", Completion(20, true)).status != 200) ++failed;
      }
    });
  }
  const bool ejected = WaitFor([&] { return g->Replicas()[2].state == "ejected"; });
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_TRUE(ejected);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(g->Replicas()[0].state, "ready");
  EXPECT_EQ(g->Replicas()[1].state, "ready");
  // After the ejection, the slow replica gets nothing new.
  const uint64_t before = slow->engine_stats().finished_length;
  for (int i = 0; i < 6; ++i) Post(g->port(), "/v1/completions", Completion(2, false));
  EXPECT_EQ(slow->engine_stats().finished_length, before);
}

TEST(GatewayBatchingTest, EmbeddingsAreMergedAndSplitBack) {
  auto a = StartReplica();
  GatewayConfig config = BaseConfig({a->port()});
  config.batching.enabled = true;
  config.batching.max_batch_size = 4;
  config.batching.max_queue_delay_ns = 500 * kNsPerMs;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  std::vector<std::thread> clients;
  std::atomic<int> good{0};
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      http::FetchedResponse r =
          Post(g->port(), "/v1/embeddings",
               json({{"input", "text number " + std::to_string(i)}, {"model", "m"}}).dump());
      if (r.status != 200) return;
      json doc = json::parse(r.body);
      if (doc["data"].size() == 1 && doc["data"][0]["index"] == 0 &&
          doc["data"][0]["embedding"].size() == 64) {
        ++good;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(good.load(), 4);
  const GatewayCounters c = g->Counters();
  EXPECT_EQ(c.batched, 4u);
  EXPECT_LT(c.batches, 4u);  // at least two shared an upstream request
}

TEST(GatewayReloadTest, AReloadChangesLimitsAndABadOneIsRefused) {
  auto a = StartReplica();
  GatewayConfig config = BaseConfig({a->port()});
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  const std::string two = R"({"prompt":"x y","max_tokens":1,"n":2})";
  EXPECT_EQ(Post(g->port(), "/v1/completions", two).status, 400);
  GatewayConfig next = config;
  next.limits.max_n = 4;
  next.limits.max_tokens = 10;
  ASSERT_TRUE(g->Reload(next).ok());
  // serve-sim itself takes only n=1: the gateway now lets it through and relays its 400.
  http::FetchedResponse relayed = Post(g->port(), "/v1/completions", two);
  EXPECT_EQ(relayed.status, 400);
  EXPECT_EQ(relayed.body.find("limits.max_n"), std::string::npos) << relayed.body;
  EXPECT_EQ(Post(g->port(), "/v1/completions", R"({"prompt":"x","max_tokens":11})").status, 400);
  GatewayConfig bad = next;
  bad.launch.command = "serve --port {port}";
  Status refused = g->Reload(bad);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("restart"), std::string::npos);
  EXPECT_EQ(Post(g->port(), "/v1/completions", Completion(1, false)).status, 200);
}

TEST(GatewayDrainTest, DrainFinishesInFlightRequestsAndRefusesNewOnes) {
  auto a = StartReplica(10 * kNsPerMs);
  auto g = StartGateway(BaseConfig({a->port()}));
  ASSERT_NE(g, nullptr);
  http::FetchedResponse streamed;
  std::thread client([&] { streamed = Post(g->port(), "/v1/completions", Completion(60, true)); });
  ASSERT_TRUE(WaitFor([&] { return g->Counters().in_flight == 1; }));
  EXPECT_EQ(g->Drain(), 0);
  client.join();
  EXPECT_EQ(streamed.status, 200);
  EXPECT_EQ(CountEvents(streamed.body), 61);
}

// Requests still running at the drain deadline get an answer that says so: a 503, or an error
// event that ends the stream; they got none (the connection closed when the server stopped).
TEST(GatewayDrainTest, RequestsStillRunningAtTheDeadlineGetA503OrAnErrorEvent) {
  auto a = StartReplica(20 * kNsPerMs);  // 5000 tokens: 100 s
  GatewayConfig config = BaseConfig({a->port()});
  config.drain_timeout_ns = 300 * kNsPerMs;
  auto g = StartGateway(config);
  ASSERT_NE(g, nullptr);
  http::FetchedResponse whole, streamed;
  std::thread c1([&] { whole = Post(g->port(), "/v1/completions", Completion(5000, false)); });
  std::thread c2([&] { streamed = Post(g->port(), "/v1/completions", Completion(5000, true)); });
  ASSERT_TRUE(WaitFor([&] { return a->engine_stats().running == 2; }));
  EXPECT_EQ(g->Drain(), 2);
  g->Stop();
  c1.join();
  c2.join();
  EXPECT_EQ(whole.status, 503);
  EXPECT_NE(whole.body.find("drain timeout"), std::string::npos) << whole.body;
  EXPECT_EQ(http::FindHeader(whole.headers, "Retry-After"), "1");
  EXPECT_EQ(streamed.status, 200);
  EXPECT_NE(streamed.body.find("data: {\"error\""), std::string::npos) << streamed.body;
  EXPECT_NE(streamed.body.find("drain timeout"), std::string::npos) << streamed.body;
  // The replica was not blamed, and its work was cancelled.
  EXPECT_TRUE(WaitFor([&] { return a->engine_stats().running == 0; }));
}

}  // namespace
}  // namespace titan::gateway
