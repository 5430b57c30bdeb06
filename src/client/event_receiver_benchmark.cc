// Event path costs:
//  - BM_ClientStepBegin/{1: live, 0: agent_down, 2: live_paced}: one titan::Client call, timed
//    one by one with a clock pair (p50/p99 ns reported as counters), with a live EventReceiver
//    draining the socket, with no socket at all, or live with 50 us between calls (untimed) so
//    that the receiver is asleep at every call, as it is in a real job where a rank sends a
//    few events per second: each call then also pays for waking the receiver thread.
//  - BM_RawSendto: the baseline a user would write by hand: one sendto() of 64 bytes.
//  - BM_Ingestion: events/s an EventReceiver takes in from one sender that paces itself on
//    the client's deferral queue, asserting no loss (every event reaches the callback).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "src/base/check.h"
#include "src/base/clock.h"
#include "src/client/event_receiver.h"
#include "src/client/titan_client.h"

namespace titan {
namespace {

std::string TempSocketPath() {
  char pattern[] = "/tmp/titan-bench-XXXXXX";
  TITAN_CHECK(mkdtemp(pattern) != nullptr) << "mkdtemp";
  return std::string(pattern) + "/agent.sock";
}

std::unique_ptr<EventReceiver> StartReceiver(const std::string& path,
                                             std::atomic<uint64_t>* received,
                                             int64_t drain_interval_ns = 0) {
  EventReceiverOptions options;
  options.socket_path = path;
  options.drain_interval_ns = drain_interval_ns;
  options.on_event = [received](const wire::ParsedEvent&) {
    received->fetch_add(1, std::memory_order_relaxed);
  };
  auto receiver = EventReceiver::Start(std::move(options));
  TITAN_CHECK(receiver.ok()) << receiver.status().ToString();
  return std::move(receiver).value();
}

// Times `call` once per iteration and reports p50/p99/max in ns. With `gap_us` > 0, spins that
// long (untimed) before each call.
template <typename Call>
void TimeEachCall(benchmark::State& state, Call call, int gap_us = 0) {
  std::vector<int64_t> ns;
  ns.reserve(state.max_iterations);
  for (auto _ : state) {
    if (gap_us > 0) {
      state.PauseTiming();
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(gap_us);
      while (std::chrono::steady_clock::now() < until) {
      }
      state.ResumeTiming();
    }
    const auto start = std::chrono::steady_clock::now();
    call();
    ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    return static_cast<double>(ns[static_cast<size_t>(q * (ns.size() - 1))]);
  };
  state.counters["p50_ns"] = at(0.50);
  state.counters["p99_ns"] = at(0.99);
  state.counters["max_ns"] = at(1.0);
}

// range(0): 0 agent down, 1 live back to back, 2 live paced (50 us between calls);
// range(1): the receiver's drain_interval_us (0: it sleeps on the socket).
void BM_ClientStepBegin(benchmark::State& state) {
  const bool live = state.range(0) >= 1;
  const bool paced = state.range(0) == 2;
  const int64_t drain_interval_ns = state.range(1) * kNsPerUs;
  const std::string path = TempSocketPath();
  std::atomic<uint64_t> received{0};
  std::unique_ptr<EventReceiver> receiver;
  if (live) receiver = StartReceiver(path, &received, drain_interval_ns);
  Client client(path, 0);
  int64_t step = 0;
  TimeEachCall(
      state, [&] { benchmark::DoNotOptimize(client.StepBegin(step++)); }, paced ? 50 : 0);
  state.counters["dropped_fraction"] =
      static_cast<double>(client.dropped()) / static_cast<double>(client.dropped() + client.sent());
  receiver.reset();
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  std::string label = !live   ? "agent down (no socket)"
                      : paced ? "live receiver, one call per 50 us"
                              : "live receiver, back to back";
  if (live) {
    label += drain_interval_ns > 0 ? fmt::format(", receiver drains every {} us", state.range(1))
                                   : ", receiver sleeps on the socket";
  }
  state.SetLabel(label);
}
BENCHMARK(BM_ClientStepBegin)->Args({1, 0})->Args({0, 0})->Iterations(1'000'000);
BENCHMARK(BM_ClientStepBegin)->Args({2, 0})->Args({2, 1000})->Iterations(100'000);

void BM_RawSendto(benchmark::State& state) {
  const std::string path = TempSocketPath();
  std::atomic<uint64_t> received{0};
  std::unique_ptr<EventReceiver> receiver = StartReceiver(path, &received);
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  wire::Event event = wire::MakeEvent(wire::EventKind::kStepBegin, 0, getpid(), 0, 0, nullptr);
  event.time_ns = WallNowNs();  // stamped once: the baseline leaves out the clock read
  TimeEachCall(state, [&] {
    benchmark::DoNotOptimize(sendto(fd, &event, sizeof(event), MSG_DONTWAIT | MSG_NOSIGNAL,
                                    reinterpret_cast<sockaddr*>(&address), sizeof(address)));
  });
  close(fd);
  receiver.reset();
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  state.SetLabel("baseline: bare sendto, live receiver");
}
BENCHMARK(BM_RawSendto)->Iterations(1'000'000);

void BM_Ingestion(benchmark::State& state) {
  constexpr int64_t kEvents = 200'000;
  const std::string path = TempSocketPath();
  std::atomic<uint64_t> received{0};
  std::unique_ptr<EventReceiver> receiver = StartReceiver(path, &received);
  Client client(path, 0);
  uint64_t expected = 0;
  for (auto _ : state) {
    for (int64_t step = 0; step < kEvents; ++step) {
      client.StepBegin(step);
      // Pace on the client's deferral queue (the kernel's holds only max_dgram_qlen events).
      while (client.deferred() >= Client::kDeferCapacity / 2) {
        client.Flush();
        std::this_thread::yield();
      }
    }
    while (client.Flush() > 0) std::this_thread::yield();
    expected += kEvents;
    while (received.load(std::memory_order_relaxed) < expected) std::this_thread::yield();
  }
  receiver->Stop();
  const EventReceiverStats stats = receiver->Stats();
  TITAN_CHECK(stats.accepted == expected && stats.rejected_total() == 0 && client.dropped() == 0)
      << "lost events: accepted " << stats.accepted << " of " << expected;
  state.SetItemsProcessed(static_cast<int64_t>(expected));
  state.counters["dropped"] = static_cast<double>(client.dropped());
  state.counters["lost"] = static_cast<double>(expected - stats.accepted);
  receiver.reset();
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}
BENCHMARK(BM_Ingestion)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace titan
