// The HTTP server and client against each other over real loopback sockets.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "src/base/clock.h"
#include "src/http/chunked_for_tests.h"
#include "src/http/client.h"
#include "src/http/server.h"

namespace titan::http {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// Body pieces any test client has received; /stream sends its next chunk only after the
// previous one arrived, so that each is its own read however loaded the machine is (5 ms apart,
// two chunks were sometimes one read on a busy machine).
std::atomic<int> pieces_received{0};
// Clients /linger saw leave (OnClientGone).
std::atomic<int> clients_left{0};

// /try-write's chunks, and what TryWrite returned for each (then once more).
std::string TryWriteChunk(int i) { return std::string(64 << 10, static_cast<char>('a' + i % 26)); }
// Written by the server's thread, read by the test's once the answer ended: under a mutex
// (the socket orders them, but no tool can see that).
std::mutex try_write_mutex;
std::vector<Exchange::TryWriteResult> try_write_results;

struct Collect : ResponseObserver {
  int status = 0;
  std::string body;
  int pieces = 0;
  std::vector<std::string> body_when_waiting;  // `body` at each OnWaiting()
  void OnHead(int s, const Headers&, int64_t) override { status = s; }
  bool OnBody(std::string_view data, int64_t) override {
    body.append(data);
    ++pieces;
    ++pieces_received;
    return true;
  }
  void OnWaiting() override { body_when_waiting.push_back(body); }
};

asio::awaitable<void> TestHandler(Exchange& ex) {
  const Request& r = ex.request();
  if (r.path() == "/echo") {
    co_await ex.Respond(200, "text/plain", r.method + " " + r.body);
  } else if (r.path() == "/stream") {
    co_await ex.BeginStream(200, "text/event-stream");
    const int base = pieces_received.load();
    for (int i = 0; i < 5; ++i) {
      for (int waited_ms = 0; pieces_received.load() < base + i && waited_ms < 5000; ++waited_ms) {
        asio::steady_timer t(ex.executor(), std::chrono::milliseconds(1));
        co_await t.async_wait(asio::use_awaitable);
      }
      std::string event = "data: " + std::to_string(i) + "\n\n";
      if (!co_await ex.Write(event)) co_return;
    }
    co_await ex.EndStream();
  } else if (r.path() == "/whole-stream") {
    co_await ex.BeginStream(200, "text/event-stream", {}, "data: all\n\n", /*end=*/true);
  } else if (r.path() == "/head-with-first") {
    co_await ex.BeginStream(200, "text/event-stream", {}, "data: 1\n\n");
    co_await ex.Write("data: 2\n\n", /*end=*/true);
  } else if (r.path() == "/hang") {
    asio::steady_timer t(ex.executor(), std::chrono::seconds(30));
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
  } else if (r.path() == "/linger") {
    // Waits a second for its client to leave: "here" if it did not.
    asio::steady_timer t(ex.executor(), std::chrono::seconds(1));
    ex.OnClientGone([&t] { t.cancel(); });
    co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ex.client_gone()) {
      ++clients_left;
      co_return;
    }
    co_await ex.Respond(200, "text/plain", "here");
  } else if (r.path() == "/headers") {  // the request's head, a line per header
    std::string lines = r.method + " " + r.target + "\n";
    for (const Header& h : r.headers) lines += h.name + ": " + h.value + "\n";
    co_await ex.Respond(200, "text/plain", lines + "body " + r.body);
  } else if (r.path() == "/drip") {  // 8 events, 100 ms apart
    co_await ex.BeginStream(200, "text/event-stream");
    for (int i = 0; i < 8; ++i) {
      asio::steady_timer t(ex.executor(), std::chrono::milliseconds(100));
      co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
      if (!co_await ex.Write("data: " + std::to_string(i) + "\n\n")) co_return;
    }
  } else if (r.path() == "/try-write") {
    // TryWrite until the client's socket stops taking chunks (it does not read yet), once
    // more, then a Write that ends the stream. The results go to try_write_results.
    co_await ex.BeginStream(200, "application/octet-stream");
    for (int i = 0; i < 400; ++i) {
      Exchange::TryWriteResult result = ex.TryWrite(TryWriteChunk(i));
      std::lock_guard lock(try_write_mutex);
      try_write_results.push_back(result);
      if (result != Exchange::TryWriteResult::kSent) break;
    }
    {
      std::lock_guard lock(try_write_mutex);
      try_write_results.push_back(ex.TryWrite("never sent"));
    }
    co_await ex.Write("tail", /*end=*/true);
  } else if (r.path() == "/silent") {
    co_return;  // no response: the server sends 500
  } else {
    std::string error = JsonError("no such path", "not_found", 404);
    co_await ex.Respond(404, "application/json", std::move(error));
  }
}

std::unique_ptr<Server> StartServer(ServerOptions options = {}) {
  auto server = Server::Start(options, TestHandler);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return std::move(server).value();
}

// Runs `body(connection)` on a fresh io_context and returns its result.
template <typename F>
auto RunClient(F body) {
  asio::io_context context;
  auto future = asio::co_spawn(context, body(context.get_executor()), asio::use_future);
  context.run();
  return future.get();
}

tcp::endpoint Local(int port) { return {asio::ip::make_address("127.0.0.1"), (uint16_t)port}; }

int64_t In(int64_t ms) { return MonoNowNs() + ms * kNsPerMs; }

TEST(HttpTest, RequestsReuseOneKeepAliveConnection) {
  auto server = StartServer();
  auto results = RunClient([&](asio::any_io_executor ex) -> asio::awaitable<std::string> {
    ClientConnection c(ex);
    ClientResult r = co_await c.Connect(Local(server->port()), kNsPerSecond);
    EXPECT_TRUE(r.ok()) << r.message;
    std::string all;
    for (int i = 0; i < 3; ++i) {
      Collect got;
      OutgoingRequest req{"POST", "/echo", "127.0.0.1", {}, "hi" + std::to_string(i)};
      r = co_await c.Send(req, got, In(2000));
      EXPECT_TRUE(r.ok()) << r.message;
      EXPECT_EQ(r.status, 200);
      EXPECT_TRUE(c.is_open());
      all += got.body + ";";
    }
    co_return all;
  });
  EXPECT_EQ(results, "POST hi0;POST hi1;POST hi2;");
  EXPECT_EQ(server->stats().connections_accepted, 1u);
  EXPECT_EQ(server->stats().requests, 3u);
}

TEST(HttpTest, StreamedChunksArriveAsTheyAreWritten) {
  auto server = StartServer();
  Collect got = RunClient([&](asio::any_io_executor ex) -> asio::awaitable<Collect> {
    ClientConnection c(ex);
    co_await c.Connect(Local(server->port()), kNsPerSecond);
    Collect got;
    OutgoingRequest req{"GET", "/stream", "x", {}, ""};
    ClientResult r = co_await c.Send(req, got, In(5000));
    EXPECT_TRUE(r.ok()) << r.message;
    co_return got;
  });
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n");
  EXPECT_EQ(got.pieces, 5);  // each chunk is its own read: none buffered
}

TEST(HttpTest, AStreamKnownAtOnceLeavesInOneWriteAndKeepsTheConnection) {
  auto server = StartServer();
  auto bodies = RunClient([&](asio::any_io_executor ex) -> asio::awaitable<std::string> {
    ClientConnection c(ex);
    co_await c.Connect(Local(server->port()), kNsPerSecond);
    std::string all;
    for (const char* path : {"/whole-stream", "/head-with-first", "/whole-stream"}) {
      Collect got;
      OutgoingRequest req{"GET", path, "x", {}, ""};
      ClientResult r = co_await c.Send(req, got, In(2000));
      EXPECT_TRUE(r.ok()) << path << ": " << r.message;
      EXPECT_EQ(got.status, 200);
      EXPECT_TRUE(c.is_open()) << path;  // the chunked framing ended cleanly: reusable
      all += got.body + ";";
    }
    co_return all;
  });
  EXPECT_EQ(bodies, "data: all\n\n;data: 1\n\ndata: 2\n\n;data: all\n\n;");
  EXPECT_EQ(server->stats().connections_accepted, 1u);
  // Head, chunk and last chunk in one write; then head + first chunk, and chunk + last chunk.
  EXPECT_EQ(server->stats().writes, 1u + 2u + 1u);
}

TEST(HttpTest, OnWaitingFollowsEachReadsWholeContent) {
  // A raw server: the head and two chunks in one write, then, 100 ms later, a chunk and the
  // last chunk. The client hands over both first chunks before it waits on the socket.
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  std::thread peer([listener] {
    int fd = accept(listener, nullptr, nullptr);
    char request[4096];
    ssize_t got = read(fd, request, sizeof request);
    (void)got;
    const std::string first =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3\r\nAB;\r\n3\r\nCD;\r\n";
    const std::string second = "3\r\nEF;\r\n0\r\n\r\n";
    EXPECT_EQ(write(fd, first.data(), first.size()), static_cast<ssize_t>(first.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(write(fd, second.data(), second.size()), static_cast<ssize_t>(second.size()));
    close(fd);
  });
  Collect got = RunClient([&](asio::any_io_executor ex) -> asio::awaitable<Collect> {
    ClientConnection c(ex);
    co_await c.Connect(Local(ntohs(addr.sin_port)), kNsPerSecond);
    Collect got;
    OutgoingRequest req{"GET", "/", "x", {}, ""};
    ClientResult r = co_await c.Send(req, got, In(5000));
    EXPECT_TRUE(r.ok()) << r.message;
    co_return got;
  });
  peer.join();
  close(listener);
  EXPECT_EQ(got.body, "AB;CD;EF;");
  EXPECT_EQ(got.body_when_waiting, std::vector<std::string>{"AB;CD;"});
}

TEST(HttpTest, LimitsAnswerWithTheRightStatus) {
  ServerOptions options;
  options.max_body_bytes = 1000;
  options.max_header_bytes = 2000;
  auto server = StartServer(options);
  auto statuses = RunClient([&](asio::any_io_executor ex) -> asio::awaitable<std::vector<int>> {
    std::vector<int> out;
    for (int which = 0; which < 4; ++which) {
      ClientConnection c(ex);
      co_await c.Connect(Local(server->port()), kNsPerSecond);
      OutgoingRequest req{"POST", "/echo", "x", {}, "ok"};
      if (which == 0) req.body = std::string(5000, 'b');
      if (which == 1) req.headers.push_back({"X-Big", std::string(5000, 'h')});
      if (which == 2) req.target = "/nowhere";
      if (which == 3) req.target = "/silent";
      Collect got;
      ClientResult r = co_await c.Send(req, got, In(2000));
      out.push_back(r.status);
    }
    co_return out;
  });
  EXPECT_EQ(statuses, (std::vector<int>{413, 431, 404, 500}));
  EXPECT_EQ(server->stats().bad_requests, 2u);
}

// A blocking socket connected to 127.0.0.1:port, for writing raw bytes; -1 on failure.
int ConnectRaw(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Writes `bytes` on a new raw connection and reads until `enough` says so, the server closes
// the connection, or 10 s pass. What was read.
std::string SendRaw(int port, std::string_view bytes,
                    const std::function<bool(const std::string&)>& enough) {
  const int fd = ConnectRaw(port);
  EXPECT_GE(fd, 0);
  if (fd < 0) return "";
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  timeval limit{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  std::string answer;
  char buf[4096];
  for (ssize_t n; !enough(answer) && (n = read(fd, buf, sizeof buf)) > 0;) answer.append(buf, n);
  close(fd);
  return answer;
}

TEST(HttpTest, SlowlorisConnectionIsClosedAndOthersAreServed) {
  ServerOptions options;
  options.request_timeout_ns = 300 * kNsPerMs;
  auto server = StartServer(options);
  // A raw client that sends half a request head and then trickles.
  const int fd = ConnectRaw(server->port());
  ASSERT_GE(fd, 0);
  ASSERT_GT(write(fd, "GET /echo HTTP/1.1\r\nX-A: 1\r\n", 28), 0);
  // Meanwhile a normal request is answered.
  std::string body = RunClient([&](asio::any_io_executor ex) -> asio::awaitable<std::string> {
    ClientConnection c(ex);
    co_await c.Connect(Local(server->port()), kNsPerSecond);
    Collect got;
    OutgoingRequest req{"POST", "/echo", "x", {}, "fine"};
    co_await c.Send(req, got, In(2000));
    co_return got.body;
  });
  EXPECT_EQ(body, "POST fine");
  // The slow one is closed once its time is up: end of file, no answer.
  timeval limit{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  EXPECT_EQ(n, 0) << "expected the server to close the connection";
  // The stream closes the socket first and then ends the read that counts it: wait for that.
  for (int i = 0; i < 200 && server->stats().bad_requests == 0; ++i) usleep(10'000);
  EXPECT_EQ(server->stats().bad_requests, 1u);
}

TEST(HttpTest, AClientThatLeavesWhileItsHandlerWaitsIsReported) {
  auto server = StartServer({});
  const int before = clients_left.load();
  // Many, each closing right after its request: the end of stream often arrives with the
  // request, before the handler starts (a watch that only waited for the next epoll edge
  // missed it).
  constexpr int kClients = 20;
  const std::string request = "GET /linger HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int i = 0; i < kClients; ++i) {
    const int fd = ConnectRaw(server->port());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    close(fd);
  }
  for (int i = 0; i < 1000 && clients_left.load() < before + kClients; ++i) usleep(10'000);
  EXPECT_EQ(clients_left.load(), before + kClients);
}

TEST(HttpTest, APipelinedRequestIsNotTakenForAClientThatLeft) {
  auto server = StartServer({});
  const int before = clients_left.load();
  auto both_answered = [](const std::string& answers) {
    return answers.find("here", answers.find("here") + 1) != std::string::npos;
  };
  const std::string answers =
      SendRaw(server->port(),
              "GET /linger HTTP/1.1\r\nHost: x\r\n\r\nGET /linger HTTP/1.1\r\nHost: x\r\n\r\n",
              both_answered);
  EXPECT_TRUE(both_answered(answers)) << answers;
  EXPECT_EQ(clients_left.load(), before);
}

TEST(HttpTest, ATransferEncodingNotEndingInChunkedIsRefusedAndTheConnectionClosed) {
  // "Transfer-Encoding: gzip" without Content-Length: the body was read as empty and its bytes
  // as a second request (a probe reached an admin path this way).
  auto server = StartServer({});
  for (const char* coding : {"gzip", "chunked, gzip"}) {
    const std::string smuggled =
        std::string("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ") + coding +
        "\r\n\r\nGET /echo HTTP/1.1\r\nHost: x\r\n\r\n";
    const std::string answer = SendRaw(server->port(), smuggled, [](const std::string&) {
      return false;  // until the server closes
    });
    EXPECT_TRUE(answer.starts_with("HTTP/1.1 400")) << coding << ": " << answer;
    EXPECT_EQ(answer.find("HTTP/1.1 200"), std::string::npos) << coding << ": " << answer;
  }
  EXPECT_EQ(server->stats().requests, 0u);
}

TEST(HttpTest, ConnectionsOverTheCapGet503) {
  ServerOptions options;
  options.max_connections = 2;
  auto server = StartServer(options);
  std::string refused_body;
  auto statuses = RunClient([&](asio::any_io_executor ex) -> asio::awaitable<std::vector<int>> {
    std::vector<std::unique_ptr<ClientConnection>> held;
    std::vector<int> out;
    for (int i = 0; i < 3; ++i) {
      held.push_back(std::make_unique<ClientConnection>(ex));
      co_await held.back()->Connect(Local(server->port()), kNsPerSecond);
      Collect got;
      OutgoingRequest req{"POST", "/echo", "x", {}, "."};
      ClientResult r = co_await held.back()->Send(req, got, In(2000));
      out.push_back(r.status);
      refused_body = got.body;
    }
    co_return out;
  });
  EXPECT_EQ(statuses, (std::vector<int>{200, 200, 503}));
  // A JSON error that says why, like every other refusal (it was an empty body).
  EXPECT_NE(refused_body.find("at its limit of 2 open connections"), std::string::npos)
      << refused_body;
  EXPECT_EQ(server->stats().connections_refused, 1u);
}

TEST(HttpTest, ASecondServerOnATakenPortFails) {
  auto first = StartServer();
  ServerOptions options;
  options.port = first->port();
  auto second = Server::Start(options, TestHandler);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(second.status().message().find("pick another port"), std::string_view::npos);
}

TEST(HttpTest, ClientErrorsAreClassified) {
  auto server = StartServer();
  int closed_port = 0;
  {
    auto gone = StartServer();
    closed_port = gone->port();
  }
  auto errors = RunClient([&](asio::any_io_executor ex) -> asio::awaitable<std::vector<int>> {
    std::vector<int> out;
    ClientConnection refused(ex);
    ClientResult refusal = co_await refused.Connect(Local(closed_port), kNsPerSecond);
    out.push_back(static_cast<int>(refusal.error));
    ClientConnection slow(ex);
    co_await slow.Connect(Local(server->port()), kNsPerSecond);
    Collect got;
    OutgoingRequest req{"GET", "/hang", "x", {}, ""};
    ClientResult r = co_await slow.Send(req, got, In(200));
    out.push_back(static_cast<int>(r.error));
    EXPECT_FALSE(slow.is_open());
    co_return out;
  });
  EXPECT_EQ(errors, (std::vector<int>{static_cast<int>(ClientError::kConnect),
                                      static_cast<int>(ClientError::kTimeout)}));
}

TEST(HttpTest, StopEndsOpenStreams) {
  auto server = StartServer();
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server->Stop();
  });
  ClientError error = RunClient([&](asio::any_io_executor ex) -> asio::awaitable<ClientError> {
    ClientConnection c(ex);
    co_await c.Connect(Local(server->port()), kNsPerSecond);
    Collect got;
    OutgoingRequest req{"GET", "/hang", "x", {}, ""};
    ClientResult r = co_await c.Send(req, got, In(5000));
    co_return r.error;
  });
  stopper.join();
  EXPECT_EQ(error, ClientError::kClosed);
}

// The client writes the request head itself: its own Host, Content-Length and User-Agent
// (a caller's User-Agent replaces it; a caller's Content-Length, Host or Connection is left
// out, not sent twice), and a header or target that could split the request is refused
// before anything is sent.
TEST(HttpTest, TheClientWritesRequestHeadsAndRefusesUnsafeOnes) {
  auto server = StartServer();
  auto results =
      RunClient([&](asio::any_io_executor ex) -> asio::awaitable<std::vector<std::string>> {
        std::vector<std::string> out;
        ClientConnection c(ex);
        co_await c.Connect(Local(server->port()), kNsPerSecond);
        OutgoingRequest req{"POST", "/headers?x=1", "example", {}, "hello"};
        req.headers = {{"content-length", "999"}, {"X-A", "1"}, {"Connection", "close"}};
        Collect plain;
        ClientResult r = co_await c.Send(req, plain, In(2000));
        EXPECT_TRUE(r.ok()) << r.message;
        out.push_back(plain.body);
        req.headers = {{"User-Agent", "mine"}};
        req.method = "GET";
        req.body.clear();
        Collect agent;
        r = co_await c.Send(req, agent, In(2000));
        EXPECT_TRUE(r.ok()) << r.message;
        EXPECT_TRUE(c.is_open());  // one keep-alive connection for both
        out.push_back(agent.body);
        for (const OutgoingRequest& bad :
             {OutgoingRequest{"GET", "/headers", "x", {{"X-B", "1\r\nX-Injected: 1"}}, ""},
              OutgoingRequest{"GET", "/headers HTTP/1.1\r\nX: y", "x", {}, ""},
              OutgoingRequest{"G T", "/headers", "x", {}, ""},
              OutgoingRequest{"GET", "/headers", "x", {{"X:C", "1"}}, ""}}) {
          Collect got;
          co_await c.Connect(Local(server->port()), kNsPerSecond);
          r = co_await c.Send(bad, got, In(2000));
          EXPECT_EQ(r.error, ClientError::kMalformed) << bad.target;
          EXPECT_NE(r.message.find("not valid"), std::string::npos) << r.message;
          EXPECT_EQ(got.status, 0);
        }
        co_return out;
      });
  EXPECT_EQ(results[0],
            "POST /headers?x=1\nHost: example\nX-A: 1\nUser-Agent: titan\nContent-Length: 5\n"
            "body hello");
  EXPECT_EQ(results[1], "GET /headers?x=1\nHost: example\nUser-Agent: mine\nbody ");
  EXPECT_EQ(server->stats().requests, 2u);  // the refused ones never reached it
}

// A body whose pieces keep coming is not cut by an idle timeout shorter than its whole length,
// but the deadline still ends it (the client keeps both with one timer per request).
TEST(HttpTest, ABodyReadIsBoundByTheIdleTimeoutAndTheDeadline) {
  auto server = StartServer();
  auto results = RunClient([&](asio::any_io_executor ex) -> asio::awaitable<std::vector<Collect>> {
    std::vector<Collect> out;
    ClientConnection c(ex);
    co_await c.Connect(Local(server->port()), kNsPerSecond);
    OutgoingRequest req{"GET", "/drip", "x", {}, ""};
    Collect steady;  // 800 ms of events 100 ms apart, 250 ms idle allowed: complete
    ClientResult r = co_await c.Send(req, steady, In(5000), 250 * kNsPerMs);
    EXPECT_TRUE(r.ok()) << r.message;
    out.push_back(steady);
    Collect late;  // the deadline ends it mid-body
    co_await c.Connect(Local(server->port()), kNsPerSecond);
    r = co_await c.Send(req, late, In(450), 250 * kNsPerMs);
    EXPECT_EQ(r.error, ClientError::kTimeout);
    EXPECT_NE(r.message.find("deadline"), std::string::npos) << r.message;
    EXPECT_FALSE(c.is_open());
    out.push_back(late);
    co_return out;
  });
  EXPECT_EQ(results[0].body.size(), 8u * 9u);
  EXPECT_GE(results[1].pieces, 2);  // the body had begun
  EXPECT_LT(results[1].pieces, 8);
}

// What TryWrite takes is sent, in order, whole: a chunk the socket took only part of goes out
// before the next write's bytes.
TEST(HttpTest, TryWriteKeepsWhatTheSocketDidNotTakeAndSendsItFirst) {
  {
    std::lock_guard lock(try_write_mutex);
    try_write_results.clear();
  }
  auto server = StartServer();
  const int fd = ConnectRaw(server->port());
  ASSERT_GE(fd, 0);
  const std::string request = "GET /try-write HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server fills the socket
  std::string raw;
  char buf[1 << 16];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) raw.append(buf, n);
  close(fd);
  std::lock_guard lock(try_write_mutex);
  ASSERT_GE(try_write_results.size(), 3u);
  const size_t taken = try_write_results.size() - 1;  // chunks TryWrite accepted
  for (size_t i = 0; i + 1 < taken; ++i) {
    EXPECT_EQ(try_write_results[i], Exchange::TryWriteResult::kSent) << i;
  }
  EXPECT_EQ(try_write_results[taken - 1], Exchange::TryWriteResult::kQueued);
  EXPECT_EQ(try_write_results[taken], Exchange::TryWriteResult::kBusy);
  const std::optional<std::string> body = DecodeChunkedForTests(raw);
  ASSERT_TRUE(body.has_value()) << "the chunked body was cut off or malformed";
  std::string expected;
  for (size_t i = 0; i < taken; ++i) expected += TryWriteChunk(static_cast<int>(i));
  expected += "tail";
  EXPECT_EQ(body->size(), expected.size());
  EXPECT_TRUE(*body == expected);
}

TEST(HttpTest, HeaderNamesCompareIgnoringAsciiCaseOnly) {
  EXPECT_TRUE(EqualsIgnoreCase("Content-Type", "content-TYPE"));
  EXPECT_FALSE(EqualsIgnoreCase("Content-Type", "Content-Typ"));
  EXPECT_FALSE(EqualsIgnoreCase("a", "b"));
  EXPECT_FALSE(EqualsIgnoreCase("\xC4", "\xE4"));  // not ASCII: compared as bytes
  EXPECT_FALSE(EqualsIgnoreCase("@", "`"));        // 0x40 and 0x60 differ by 32 but are no letters
  const Headers headers = {{"X-Request-Id", "a"}, {"x-request-id", "b"}};
  EXPECT_EQ(FindHeader(headers, "X-REQUEST-ID"), "a");
  EXPECT_EQ(FindHeader(headers, "X-Request"), "");
}

// The server writes response heads itself: its own framing whatever a handler's extra headers
// say, an extra Content-Type replacing its own, and no header that could split the head.
TEST(HttpTest, ResponseHeadsKeepTheirFramingAndRefuseUnsafeHeaders) {
  auto server = Server::Start({}, [](Exchange& ex) -> asio::awaitable<void> {
    const Headers extra = {{"Content-Length", "1"},
                           {"Connection", "close"},
                           {"X-Split", "a\r\nX-Injected: 1"},
                           {"content-type", "text/x-mine"},
                           {"X-Ok", "yes"}};
    if (ex.request().path() == "/whole") {
      co_await ex.Respond(200, "text/plain", "whole body", extra);
    } else {
      co_await ex.BeginStream(429, "text/event-stream", extra, "data: 1\n\n", /*end=*/true);
    }
  });
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  auto ends = [](const std::string& got) {
    return got.ends_with("0\r\n\r\n") || got.ends_with("body");
  };
  const std::string request =
      "GET /whole HTTP/1.1\r\nHost: x\r\n\r\nGET /stream HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string both = SendRaw(port, request, [&](const std::string& got) {
    return got.find("HTTP/1.1 429") != std::string::npos && ends(got);
  });
  EXPECT_EQ(both,
            "HTTP/1.1 200 OK\r\nServer: titan\r\ncontent-type: text/x-mine\r\nX-Ok: yes\r\n"
            "Content-Length: 10\r\n\r\nwhole body"
            "HTTP/1.1 429 Too Many Requests\r\nServer: titan\r\nCache-Control: no-cache\r\n"
            "content-type: text/x-mine\r\nX-Ok: yes\r\nTransfer-Encoding: chunked\r\n\r\n"
            "9\r\ndata: 1\n\n\r\n0\r\n\r\n");
}

TEST(HttpTest, ParsesUrls) {
  auto url = ParseUrl("http://127.0.0.1:8000/v1/");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, 8000);
  EXPECT_EQ(url->path, "/v1");
  auto v6 = ParseUrl("http://[::1]:9/");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(ParseUrl("http://localhost")->port, 80);
  EXPECT_FALSE(ParseUrl("https://x").ok());
  EXPECT_FALSE(ParseUrl("127.0.0.1:80").ok());
  EXPECT_FALSE(ParseUrl("http://h:99999").ok());
  EXPECT_FALSE(ParseUrl("http://:80").ok());
  EXPECT_FALSE(ParseUrl("http://u:p@h:1").ok());
  EXPECT_FALSE(ParseUrl("http://h:1/?a=b").ok());
  EXPECT_FALSE(ParseUrl("http://h:1#f").ok());
}

}  // namespace
}  // namespace titan::http
