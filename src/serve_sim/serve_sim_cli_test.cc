// `titan serve-sim` as a real process: the "listening on" line, SIGTERM, usage errors, and a
// crash fault that kills it by SIGKILL in the middle of a stream. Needs the titan binary
// (skipped when it is not built).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "src/base/clock.h"
#include "src/http/client.h"
#include "src/http/sse.h"

extern char** environ;

namespace titan::serve_sim {
namespace {

namespace asio = boost::asio;

const std::string kTitan = std::string(TITAN_BINARY_DIR) + "/tools/titan/titan";

struct Process {
  pid_t pid = -1;
  int stderr_fd = -1;
  std::string err;  // stderr read so far
  int port = 0;
};

// Starts `titan serve-sim --port 0 ARGS` and reads stderr until the listening line (or exit).
Process StartServeSim(std::vector<std::string> args) {
  Process p;
  int fds[2];
  if (pipe(fds) != 0) return p;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<std::string> all = {kTitan, "serve-sim"};
  if (std::find(args.begin(), args.end(), "--port") == args.end()) {
    all.insert(all.end(), {"--port", "0"});
  }
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  if (posix_spawn(&p.pid, kTitan.c_str(), &actions, nullptr, argv.data(), environ) != 0) {
    p.pid = -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  p.stderr_fd = fds[0];
  const int64_t deadline = MonoNowNs() + 20 * kNsPerSecond;
  char buf[4096];
  while (MonoNowNs() < deadline) {
    const size_t at = p.err.find("listening on http://127.0.0.1:");
    if (at != std::string::npos && p.err.find('\n', at) != std::string::npos) {
      p.port = std::stoi(p.err.substr(at + 30));
      break;
    }
    const ssize_t n = read(p.stderr_fd, buf, sizeof buf);
    if (n <= 0) break;
    p.err.append(buf, static_cast<size_t>(n));
  }
  return p;
}

// Waits for the process to end; returns the raw wait status.
int Wait(Process& p) {
  int status = 0;
  waitpid(p.pid, &status, 0);
  close(p.stderr_fd);
  return status;
}

struct Events : http::ResponseObserver {
  http::SseParser parser;
  int events = 0;
  bool OnBody(std::string_view bytes, int64_t) override {
    return parser.Feed(bytes, [&](const http::SseEvent&) { ++events; }).ok();
  }
};

http::ClientResult Request(int port, std::string method, std::string target, std::string body,
                           http::ResponseObserver& observer) {
  asio::io_context context;
  auto run = [&]() -> asio::awaitable<http::ClientResult> {
    http::ClientConnection c(context.get_executor());
    asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"),
                                     static_cast<uint16_t>(port));
    http::ClientResult r = co_await c.Connect(endpoint, 2 * kNsPerSecond);
    if (!r.ok()) co_return r;
    http::OutgoingRequest request{method, target, "127.0.0.1", {}, body};
    r = co_await c.Send(request, observer, MonoNowNs() + 30 * kNsPerSecond);
    co_return r;
  };
  auto future = asio::co_spawn(context, run(), asio::use_future);
  context.run();
  return future.get();
}

class ServeSimCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kTitan.c_str(), X_OK) != 0) GTEST_SKIP() << kTitan << " is not built";
  }
};

TEST_F(ServeSimCliTest, PrintsThePortAndStopsCleanlyOnSigterm) {
  Process p = StartServeSim({"--model", "m", "--max-num-seqs", "8"});
  ASSERT_GT(p.port, 0) << p.err;
  EXPECT_NE(p.err.find("(model m, max_num_seqs 8)"), std::string::npos) << p.err;
  Events health;
  EXPECT_EQ(Request(p.port, "GET", "/health", "", health).status, 200);
  kill(p.pid, SIGTERM);
  const int status = Wait(p);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(ServeSimCliTest, UsageErrorsExit2) {
  Process p = StartServeSim({"--fault", "explode@1s"});
  const int status = Wait(p);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_EQ(p.port, 0);
}

TEST_F(ServeSimCliTest, ATakenPortExits1) {
  Process first = StartServeSim({});
  ASSERT_GT(first.port, 0) << first.err;
  Process second = StartServeSim({"--port", std::to_string(first.port)});
  const int status = Wait(second);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  kill(first.pid, SIGTERM);
  Wait(first);
}

TEST_F(ServeSimCliTest, ACrashFaultKillsTheProcessMidStream) {
  Process p = StartServeSim({"--fault", "crash@1s", "--itl-base", "10ms"});
  ASSERT_GT(p.port, 0) << p.err;
  Events events;
  http::ClientResult r =
      Request(p.port, "POST", "/v1/completions",
              R"({"prompt":"a","max_tokens":2000,"stream":true})", events);  // 20 s if nothing dies
  EXPECT_EQ(r.error, http::ClientError::kClosed) << r.message;
  EXPECT_GT(events.events, 0);
  EXPECT_LT(events.events, 2001);
  const int status = Wait(p);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST_F(ServeSimCliTest, AdminCrashKillsTheProcess) {
  Process p = StartServeSim({});
  ASSERT_GT(p.port, 0) << p.err;
  Events reply;
  Request(p.port, "POST", "/admin/fault", R"({"crash":true})", reply);
  const int status = Wait(p);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

}  // namespace
}  // namespace titan::serve_sim
