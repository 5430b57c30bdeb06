// WorkPool against a real Server: work that blocks runs off the event loop.
#include "src/http/work_pool.h"

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/http/client.h"
#include "src/http/server.h"

namespace titan::http {
namespace {

namespace asio = boost::asio;

// What the handler below shares with the test.
struct Shared {
  WorkPool pool{2};
  std::atomic<bool> slow_job_started{false};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
};
Shared* shared = nullptr;

asio::awaitable<void> Handler(Exchange& ex) {
  if (ex.request().path() == "/slow") {
    // Blocks until the test has had its answer to /fast: never returns if the loop waits for it.
    asio::awaitable<std::string> job = shared->pool.Run([] {
      shared->slow_job_started = true;
      shared->released.wait();
      return std::string("slow done");
    });
    const std::string body = co_await std::move(job);
    co_await ex.Respond(200, "text/plain", body);
  } else {
    co_await ex.Respond(200, "text/plain", "fast");
  }
}

Result<FetchedResponse> Get(int port, const std::string& target, int64_t timeout_ns) {
  OutgoingRequest request;
  request.method = "GET";
  request.target = target;
  return Fetch(Url{"127.0.0.1", port, ""}, request, timeout_ns);
}

TEST(WorkPool, AJobWaitingForALockDoesNotStallTheLoop) {
  Shared state;
  shared = &state;
  auto server = Server::Start(ServerOptions{}, Handler);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  std::future<Result<FetchedResponse>> slow =
      std::async(std::launch::async, [port] { return Get(port, "/slow", 60 * kNsPerSecond); });
  for (int i = 0; i < 10000 && !state.slow_job_started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(state.slow_job_started);
  // Generous: only "answers at all while the job blocks" matters.
  Result<FetchedResponse> fast = Get(port, "/fast", 20 * kNsPerSecond);
  state.release.set_value();
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  EXPECT_EQ(fast->body, "fast");
  Result<FetchedResponse> done = slow.get();
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->body, "slow done");
  // The documented shutdown order: the pool, then the server.
  state.pool.Close();
  (*server)->Stop();
  shared = nullptr;
}

TEST(WorkPool, AfterCloseJobsRunOnTheLoop) {
  Shared state;
  shared = &state;
  state.release.set_value();
  state.pool.Close();
  auto server = Server::Start(ServerOptions{}, Handler);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  Result<FetchedResponse> slow = Get((*server)->port(), "/slow", 20 * kNsPerSecond);
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_EQ(slow->body, "slow done");
  (*server)->Stop();
  shared = nullptr;
}

}  // namespace
}  // namespace titan::http
