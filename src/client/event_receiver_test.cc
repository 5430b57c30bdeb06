// Client -> EventReceiver over real Unix datagram sockets in a temporary directory.
#include "src/client/event_receiver.h"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/client/titan_client.h"
#include "src/client/titan_client_c.h"

extern "C" int titan_client_c_smoke(void);  // titan_client_c_smoke.c

namespace titan {
namespace {

using wire::EventKind;
using wire::ParsedEvent;
using wire::RejectReason;

// Generous bound for waits, only so that a broken test fails instead of hanging.
constexpr auto kWaitLimit = std::chrono::seconds(60);

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/titan-events-XXXXXX";
    TITAN_CHECK(mkdtemp(pattern) != nullptr) << "mkdtemp: " << std::strerror(errno);
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A receiver whose callback stores every event.
class Collector {
 public:
  Result<std::unique_ptr<EventReceiver>> Start(
      const std::string& path,
      int64_t drain_interval_ns = EventReceiverOptions::kAutoDrainInterval) {
    EventReceiverOptions options;
    options.socket_path = path;
    options.drain_interval_ns = drain_interval_ns;
    options.on_event = [this](const ParsedEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(e);
      cv_.notify_all();
    };
    return EventReceiver::Start(std::move(options));
  }
  // Waits until at least n events arrived; returns them.
  std::vector<ParsedEvent> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kWaitLimit, [&] { return events_.size() >= n; });
    return events_;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ParsedEvent> events_;
};

// Waits until the receiver has read `n` datagrams (valid or not).
void WaitForDatagrams(const EventReceiver& r, uint64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  while (r.Stats().datagrams < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Sends raw bytes to a socket path.
void SendRaw(const std::string& path, const void* data, size_t size) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  EXPECT_EQ(sendto(fd, data, size, 0, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            static_cast<ssize_t>(size))
      << std::strerror(errno);
  close(fd);
}

// Binds a socket at `path` that never reads; returns its fd.
int BindSilentSocket(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  TITAN_CHECK(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) << path;
  return fd;
}

TEST(EventReceiverTest, EveryKindRoundTripsWithExactFields) {
  TempDir dir;
  Collector collector;
  auto receiver = collector.Start(dir.File("agent.sock"));
  ASSERT_TRUE(receiver.ok()) << receiver.status().ToString();
  Client client(dir.File("agent.sock"), 5);
  const int64_t before_ns = WallNowNs();
  EXPECT_TRUE(client.Hello("job-a"));
  EXPECT_TRUE(client.StepBegin(10));
  EXPECT_TRUE(client.StepEnd(10));
  EXPECT_TRUE(client.CheckpointBegin(11, "ckpt"));
  EXPECT_TRUE(client.CheckpointEnd(11, 123456789, "ckpt"));
  EXPECT_TRUE(client.CheckpointCommitted(11, 4096));
  EXPECT_TRUE(client.CheckpointDurable(11, 2048));
  EXPECT_TRUE(client.Mark("eval"));
  EXPECT_TRUE(client.Heartbeat());
  EXPECT_TRUE(client.Goodbye());
  const int64_t after_ns = WallNowNs();
  std::vector<ParsedEvent> events = collector.WaitFor(10);
  ASSERT_EQ(events.size(), 10u);

  struct Want {
    EventKind kind;
    int64_t step;
    int64_t value;
    std::string name;
  };
  const Want want[] = {
      {EventKind::kHello, -1, 0, "job-a"},
      {EventKind::kStepBegin, 10, 0, ""},
      {EventKind::kStepEnd, 10, 0, ""},
      {EventKind::kCheckpointBegin, 11, 0, "ckpt"},
      {EventKind::kCheckpointEnd, 11, 123456789, "ckpt"},
      {EventKind::kCheckpointCommitted, 11, 4096, ""},
      {EventKind::kCheckpointDurable, 11, 2048, ""},
      {EventKind::kMark, -1, 0, "eval"},
      {EventKind::kHeartbeat, -1, 0, ""},
      {EventKind::kGoodbye, -1, 0, ""},
  };
  int64_t previous_ns = 0;
  for (size_t i = 0; i < 10; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(events[i].kind, want[i].kind);
    EXPECT_EQ(events[i].step, want[i].step);
    EXPECT_EQ(events[i].value, want[i].value);
    EXPECT_EQ(events[i].name(), want[i].name);
    EXPECT_EQ(events[i].rank, 5);
    EXPECT_EQ(events[i].claimed_pid, getpid());
    EXPECT_EQ(events[i].sender_pid, getpid());  // from SCM_CREDENTIALS
    EXPECT_EQ(events[i].sender_uid, getuid());
    EXPECT_GE(events[i].time_ns, before_ns);
    EXPECT_LE(events[i].time_ns, after_ns);
    EXPECT_GE(events[i].time_ns, previous_ns);
    EXPECT_GE(events[i].received_ns, events[i].time_ns);
    previous_ns = events[i].time_ns;
  }
  EXPECT_EQ(client.sent(), 10u);
  EXPECT_EQ(client.dropped(), 0u);
  const EventReceiverStats stats = (*receiver)->Stats();
  EXPECT_EQ(stats.datagrams, 10u);
  EXPECT_EQ(stats.accepted, 10u);
  EXPECT_EQ(stats.rejected_total(), 0u);
}

TEST(EventReceiverTest, LongUtf8NameIsCutAtACharacterBoundary) {
  TempDir dir;
  Collector collector;
  auto receiver = collector.Start(dir.File("agent.sock"));
  ASSERT_TRUE(receiver.ok());
  Client client(dir.File("agent.sock"), 0);
  std::string name;
  for (int i = 0; i < 10; ++i) name += "\xe6\xad\xa5";  // 30 bytes of "步"
  EXPECT_TRUE(client.Mark(name));
  std::vector<ParsedEvent> events = collector.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name(), name.substr(0, 21));
  EXPECT_FALSE(events[0].name_repaired);
}

TEST(EventReceiverTest, AgentDownCallsReturnAndCountDrops) {
  TempDir dir;
  Client client(dir.File("nobody.sock"), 0);  // no socket file at all
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(client.StepBegin(i));
  EXPECT_EQ(client.dropped(), 1000u);
  EXPECT_EQ(client.sent(), 0u);
  EXPECT_EQ(client.last_errno(), ENOENT);

  // A socket file nobody reads from any more (a dead agent): ECONNREFUSED.
  close(BindSilentSocket(dir.File("dead.sock")));
  Client stale(dir.File("dead.sock"), 0);
  EXPECT_FALSE(stale.Heartbeat());
  EXPECT_EQ(stale.dropped(), 1u);
  EXPECT_EQ(stale.last_errno(), ECONNREFUSED);
}

TEST(EventReceiverTest, FullQueueDefersThenDropsInsteadOfBlocking) {
  TempDir dir;
  const std::string path = dir.File("stuck.sock");
  const int fd = BindSilentSocket(path);  // alive, never reads (yet)
  Client client(path, 0);
  for (int i = 0; i < 5000; ++i) client.StepBegin(i);  // would hang here if sendto blocked
  EXPECT_EQ(client.deferred(), Client::kDeferCapacity);
  EXPECT_GT(client.dropped(), 0u);
  EXPECT_EQ(client.sent() + client.deferred() + client.dropped(), 5000u);
  EXPECT_EQ(client.last_errno(), EAGAIN);

  // Read what the kernel queued; the deferred events then go out, in order, with the next call.
  const uint64_t queued = client.sent();
  std::vector<int64_t> steps;
  wire::Event e;
  while (recv(fd, &e, sizeof(e), MSG_DONTWAIT) == sizeof(e)) steps.push_back(e.step);
  ASSERT_EQ(steps.size(), queued);
  const uint64_t dropped = client.dropped();
  EXPECT_FALSE(client.StepBegin(5000));  // behind the deferred events: deferred too
  // Read, flush, read... as a receiver would; the kernel takes max_dgram_qlen at a time.
  for (int round = 0; round < 10'000 && client.deferred() > 0; ++round) {
    while (recv(fd, &e, sizeof(e), MSG_DONTWAIT) == sizeof(e)) steps.push_back(e.step);
    client.Flush();
  }
  while (recv(fd, &e, sizeof(e), MSG_DONTWAIT) == sizeof(e)) steps.push_back(e.step);
  EXPECT_EQ(client.deferred(), 0);
  EXPECT_EQ(client.dropped(), dropped);  // nothing more lost
  ASSERT_EQ(steps.size(), queued + Client::kDeferCapacity + 1);
  for (size_t i = 1; i < steps.size(); ++i) EXPECT_LT(steps[i - 1], steps[i]) << i;
  EXPECT_EQ(steps.back(), 5000);
  // The goodbye tells the receiver how many events were lost (it warns about them).
  EXPECT_TRUE(client.Goodbye());
  ASSERT_EQ(recv(fd, &e, sizeof(e), MSG_DONTWAIT), static_cast<ssize_t>(sizeof(e)));
  EXPECT_EQ(e.kind, static_cast<uint16_t>(EventKind::kGoodbye));
  EXPECT_EQ(e.value, static_cast<int64_t>(dropped));
  close(fd);
}

TEST(EventReceiverTest, EnvironmentConfiguresSocketsAndRank) {
  TempDir dir;
  Collector a, b;
  auto ra = a.Start(dir.File("a.sock"));
  auto rb = b.Start(dir.File("b.sock"));
  ASSERT_TRUE(ra.ok() && rb.ok());
  // Unusable entries (empty) are skipped; every event goes to both sockets.
  const std::string paths = dir.File("a.sock") + "::" + dir.File("b.sock");
  setenv(wire::kSocketEnv, paths.c_str(), 1);
  setenv("RANK", "4", 1);
  setenv("TITAN_RANK", "9", 1);  // TITAN_RANK wins over RANK
  Client client;
  EXPECT_TRUE(client.StepBegin(1));
  EXPECT_EQ(client.socket_paths(), dir.File("a.sock") + ":" + dir.File("b.sock"));
  unsetenv("TITAN_RANK");
  Client rank_only;
  EXPECT_TRUE(rank_only.StepBegin(2));
  setenv(wire::kSocketEnv, "", 1);
  Client disabled;
  EXPECT_FALSE(disabled.StepBegin(3));
  EXPECT_EQ(disabled.dropped(), 0u);  // disabled on purpose: nothing to count
  unsetenv(wire::kSocketEnv);
  unsetenv("RANK");

  for (Collector* c : {&a, &b}) {
    std::vector<ParsedEvent> events = c->WaitFor(2);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].rank, 9);
    EXPECT_EQ(events[0].step, 1);
    EXPECT_EQ(events[1].rank, 4);
    EXPECT_EQ(events[1].step, 2);
  }
}

TEST(EventReceiverTest, MalformedDatagramsAreCountedPerReason) {
  TempDir dir;
  Collector collector;
  const std::string path = dir.File("agent.sock");
  auto receiver = collector.Start(path);
  ASSERT_TRUE(receiver.ok());
  auto valid = [] {
    wire::Event e = wire::MakeEvent(EventKind::kMark, 1, getpid(), 1, 0, "ok");
    e.time_ns = WallNowNs();
    return e;
  };
  wire::Event e = valid();
  SendRaw(path, &e, 63);  // too short
  SendRaw(path, &e, 0);   // empty
  char big[100] = {};
  std::memcpy(big, &e, sizeof(e));
  SendRaw(path, big, sizeof(big));  // oversized
  e.magic = 0xdeadbeef;
  SendRaw(path, &e, sizeof(e));
  e = valid();
  e.version = 7;
  SendRaw(path, &e, sizeof(e));
  e = valid();
  e.kind = 99;
  SendRaw(path, &e, sizeof(e));
  e = valid();
  std::memset(e.name, 'n', sizeof(e.name));
  SendRaw(path, &e, sizeof(e));
  e = valid();
  e.rank = -7;
  SendRaw(path, &e, sizeof(e));
  e = valid();
  e.time_ns = -5;
  SendRaw(path, &e, sizeof(e));
  e = valid();
  e.time_ns = WallNowNs() + 10 * wire::kMaxFutureSkewNs;
  SendRaw(path, &e, sizeof(e));
  e = valid();
  std::memcpy(e.name, "bad\x01", 5);
  SendRaw(path, &e, sizeof(e));  // accepted, name repaired
  WaitForDatagrams(**receiver, 11);

  const EventReceiverStats s = (*receiver)->Stats();
  EXPECT_EQ(s.datagrams, 11u);
  EXPECT_EQ(s.rejected_for(RejectReason::kTooShort), 2u);
  EXPECT_EQ(s.rejected_for(RejectReason::kTooLong), 1u);
  EXPECT_EQ(s.oversized, 1u);
  EXPECT_EQ(s.rejected_for(RejectReason::kBadMagic), 1u);
  EXPECT_EQ(s.rejected_for(RejectReason::kBadVersion), 1u);
  EXPECT_EQ(s.rejected_for(RejectReason::kUnknownKind), 1u);
  EXPECT_EQ(s.rejected_for(RejectReason::kNameNotTerminated), 1u);
  EXPECT_EQ(s.rejected_for(RejectReason::kBadRank), 1u);
  EXPECT_EQ(s.rejected_for(RejectReason::kBadTime), 1u);
  EXPECT_EQ(s.rejected_for(RejectReason::kFutureTime), 1u);
  EXPECT_EQ(s.rejected_total(), 10u);
  EXPECT_EQ(s.accepted, 1u);
  EXPECT_EQ(s.names_repaired, 1u);
  std::vector<ParsedEvent> events = collector.WaitFor(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name(), "bad?");
}

// Runs 2 sender threads x per_thread events against a receiver; `send(t, step)` sends one.
// Checks that each thread's events arrive in order without duplicates; returns the count.
// Waits (bounded) until done(received) after the senders finish.
template <typename SendFn>
uint64_t Flood(const std::string& path, int64_t per_thread, SendFn send,
               const std::function<bool(uint64_t)>& done) {
  constexpr int kThreads = 2;
  int64_t next_step[kThreads] = {0, 0};  // receiver thread only, read after Stop()
  std::atomic<uint64_t> out_of_order{0};
  std::atomic<uint64_t> received{0};
  EventReceiverOptions options;
  options.socket_path = path;
  options.on_event = [&](const ParsedEvent& e) {
    const int64_t t = e.value;
    if (t < 0 || t >= kThreads || e.step < next_step[t]) {
      out_of_order.fetch_add(1);  // a duplicate or reordered event
    } else {
      next_step[t] = e.step + 1;  // a step may be missing only if the sender counted a drop
    }
    received.fetch_add(1);
  };
  auto receiver = EventReceiver::Start(std::move(options));
  EXPECT_TRUE(receiver.ok());
  if (!receiver.ok()) return 0;
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t) {
    senders.emplace_back([&send, t, per_thread] {
      for (int64_t step = 0; step < per_thread; ++step) send(t, step);
    });
  }
  for (std::thread& s : senders) s.join();
  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  while (!done(received.load()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  (*receiver)->Stop();
  const EventReceiverStats s = (*receiver)->Stats();
  EXPECT_EQ(s.accepted, received.load());
  EXPECT_EQ(s.rejected_total(), 0u);
  EXPECT_EQ(out_of_order.load(), 0u);
  return received.load();
}

TEST(EventReceiverTest, FloodFromTwoThreadsArrivesWithoutLoss) {
  TempDir dir;
  const std::string path = dir.File("agent.sock");
  constexpr int64_t kPerThread = 100'000;
  // One client per thread. The kernel queue holds only net.unix.max_dgram_qlen datagrams, so a
  // sender faster than the receiver has events deferred; it paces itself on deferred(), so its
  // deferral queue never overflows and nothing may be dropped.
  Client clients[2] = {{path, 0}, {path, 1}};
  auto send = [&](int t, int64_t step) {
    Client& c = clients[t];  // each thread uses only its own client
    while (c.deferred() >= Client::kDeferCapacity / 2) {
      c.Flush();
      std::this_thread::yield();
    }
    c.Send(EventKind::kStepBegin, step, t, {});
    if (step == kPerThread - 1) {
      while (c.Flush() > 0) std::this_thread::yield();
    }
  };
  const uint64_t total = 2 * kPerThread;
  const uint64_t received = Flood(path, kPerThread, send, [&](uint64_t n) { return n >= total; });
  EXPECT_EQ(received, total);
  EXPECT_EQ(clients[0].sent() + clients[1].sent(), total);
  EXPECT_EQ(clients[0].dropped() + clients[1].dropped(), 0u);
}

TEST(EventReceiverTest, FloodThroughOneSharedClientIsAccountedExactly) {
  TempDir dir;
  const std::string path = dir.File("agent.sock");
  constexpr int64_t kPerThread = 50'000;
  Client client(path, 0);
  // No pacing: events the deferral queue cannot take are dropped. Every event must be either
  // received exactly once or counted as dropped, and each thread's order must hold.
  const uint64_t total = 2 * kPerThread;
  auto send = [&](int t, int64_t step) {
    client.Send(EventKind::kStepBegin, step, t, {});
    if (step == kPerThread - 1) {
      while (client.Flush() > 0) std::this_thread::yield();
    }
  };
  const uint64_t received =
      Flood(path, kPerThread, send, [&](uint64_t n) { return n + client.dropped() >= total; });
  EXPECT_EQ(client.deferred(), 0);
  EXPECT_EQ(received, client.sent());
  EXPECT_EQ(received + client.dropped(), total);
  std::printf("shared client flood: %llu received, %llu dropped\n",
              static_cast<unsigned long long>(received),
              static_cast<unsigned long long>(client.dropped()));
}

// Both ways of waiting (sleeping on the socket; draining it every millisecond) deliver every
// event in order, and Stop() delivers what is already queued before it returns.
class DrainModeTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(DrainModeTest, DeliversInOrderAndStopFlushesTheQueue) {
  TempDir dir;
  Collector collector;
  auto receiver = collector.Start(dir.File("agent.sock"), GetParam());
  ASSERT_TRUE(receiver.ok());
  EXPECT_EQ((*receiver)->drain_interval_ns(), GetParam());
  Client client(dir.File("agent.sock"), 0);
  for (int64_t step = 0; step < 200; ++step) {
    client.StepEnd(step);
    while (client.Flush() > 0) std::this_thread::yield();  // pace on a full kernel queue
  }
  EXPECT_EQ(client.dropped(), 0u);
  collector.WaitFor(200);
  // Queued but (very likely) not yet read: Stop() must still deliver them.
  for (int64_t step = 200; step < 205; ++step) EXPECT_TRUE(client.StepEnd(step));
  (*receiver)->Stop();
  std::vector<ParsedEvent> events = collector.WaitFor(205);
  ASSERT_EQ(events.size(), 205u);
  for (int64_t step = 0; step < 205; ++step) EXPECT_EQ(events[step].step, step);
}

INSTANTIATE_TEST_SUITE_P(SleepOrTimed, DrainModeTest, ::testing::Values(0, kNsPerMs));

// In a network namespace of its own (so that the host's setting is untouched), a receiver asked
// to raise net.unix.max_dgram_qlen does so, and then drains every millisecond (auto mode).
TEST(EventReceiverTest, RaisesTheDatagramQueueInItsOwnNetworkNamespace) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "needs root to create a network namespace (unshare(CLONE_NEWNET))";
  }
  TempDir dir;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNET) != 0) _exit(10);
    EventReceiverOptions options;
    options.socket_path = dir.File("agent.sock");
    options.on_event = [](const ParsedEvent&) {};
    options.raise_max_dgram_qlen_to = 512;
    auto r = EventReceiver::Start(std::move(options));
    if (!r.ok()) _exit(11);
    if ((*r)->max_datagram_queue() != 512) _exit(12);
    if ((*r)->drain_interval_ns() != kNsPerMs) _exit(13);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 10) GTEST_SKIP() << "unshare(CLONE_NEWNET) is not permitted here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "11: Start failed, 12: queue not raised, 13: not timed";
}

TEST(EventReceiverTest, StaleSocketFileIsReplaced) {
  TempDir dir;
  const std::string path = dir.File("agent.sock");
  close(BindSilentSocket(path));  // the file stays, nobody listens: a crashed agent
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  Collector collector;
  auto receiver = collector.Start(path);
  ASSERT_TRUE(receiver.ok()) << receiver.status().ToString();
  Client client(path, 0);
  EXPECT_TRUE(client.StepBegin(1));
  EXPECT_EQ(collector.WaitFor(1).size(), 1u);
  receiver->reset();  // the destructor removes its socket file
  EXPECT_NE(lstat(path.c_str(), &st), 0);
}

TEST(EventReceiverTest, LiveReceiverIsNotStolen) {
  TempDir dir;
  const std::string path = dir.File("agent.sock");
  Collector first, second;
  auto a = first.Start(path);
  ASSERT_TRUE(a.ok());
  auto b = second.Start(path);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(b.status().message().find(path), std::string_view::npos);
  // The failed second receiver left the first one's socket alone.
  Client client(path, 0);
  EXPECT_TRUE(client.StepBegin(1));
  EXPECT_EQ(first.WaitFor(1).size(), 1u);
}

TEST(EventReceiverTest, BadPathsAreErrors) {
  TempDir dir;
  Collector c;
  const std::string file = dir.File("regular");
  close(open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
  auto r = c.Start(file);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  struct stat st;
  EXPECT_EQ(lstat(file.c_str(), &st), 0);  // not removed
  r = c.Start(dir.File(std::string(200, 'x')));
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = c.Start(dir.File("missing-dir/agent.sock"));
  EXPECT_FALSE(r.ok());
  EventReceiverOptions no_callback;
  no_callback.socket_path = dir.File("x.sock");
  EXPECT_EQ(EventReceiver::Start(no_callback).status().code(), StatusCode::kInvalidArgument);
}

TEST(EventReceiverTest, ForkedChildSendsItsOwnPid) {
  TempDir dir;
  Collector collector;
  auto receiver = collector.Start(dir.File("agent.sock"));
  ASSERT_TRUE(receiver.ok());
  Client client(dir.File("agent.sock"), 2);
  EXPECT_TRUE(client.StepBegin(1));  // initialised in the parent
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(client.StepBegin(2) ? 0 : 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::vector<ParsedEvent> events = collector.WaitFor(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].claimed_pid, getpid());
  EXPECT_EQ(events[1].step, 2);
  EXPECT_EQ(events[1].claimed_pid, child);
  EXPECT_EQ(events[1].sender_pid, child);
}

TEST(EventReceiverTest, CApiSendsEveryKind) {
  TempDir dir;
  Collector collector;
  auto receiver = collector.Start(dir.File("agent.sock"));
  ASSERT_TRUE(receiver.ok());
  // The C API uses the process-wide client, configured from the environment on first use.
  setenv(wire::kSocketEnv, dir.File("agent.sock").c_str(), 1);
  EXPECT_EQ(titan_client_c_smoke(), 8);
  unsetenv(wire::kSocketEnv);
  EXPECT_EQ(titan_sent(), 8u);
  EXPECT_EQ(titan_dropped(), 0u);
  std::vector<ParsedEvent> events = collector.WaitFor(8);
  ASSERT_EQ(events.size(), 8u);
  EXPECT_EQ(events[0].name(), "c-job");
  EXPECT_EQ(events[4].value, 4096);
  EXPECT_EQ(events[5].name(), "c-mark");
  for (const ParsedEvent& e : events) EXPECT_EQ(e.rank, 11);
}

}  // namespace
}  // namespace titan
