// The monitoring loop's decisions, driven through its seams (MonitorHost, Rendezvous) with a fake
// clock, fake workers and scripted step events: no processes are spawned.
#include "src/supervisor/monitor.h"

#include <signal.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/clock.h"

namespace titan::supervisor {
namespace {

using nlohmann::json;

constexpr int64_t kT0 = 1000 * kNsPerSecond;  // the fake monotonic clock's start

int ExitCode(int code) { return (code & 0xff) << 8; }  // a wait status
int KilledBy(int sig) { return sig & 0x7f; }

// Fake workers and clock. Each WaitForInput advances the clock by the loop's timeout and then
// runs `on_tick` (the test's script: exits, events, signals at given times).
class FakeHost final : public MonitorHost {
 public:
  explicit FakeHost(int nworkers) {
    for (int r = 0; r < nworkers; ++r) {
      Worker w;
      w.local_rank = r;
      w.rank = r;
      w.pid = 1000 + r;
      w.running = true;
      workers_.push_back(w);
    }
  }
  int64_t Now() override { return now; }
  int WaitForInput(int64_t timeout_ns) override {
    now += timeout_ns;
    ++ticks;
    // A loop that never ends on its own is stopped (as a preemption, which the tests check
    // against) instead of hanging the test.
    if (ticks > 100000) return SIGKILL;
    if (on_tick) on_tick(*this);
    return stop_signal;
  }
  std::vector<wire::ParsedEvent> DrainEvents() override {
    std::vector<wire::ParsedEvent> out;
    out.swap(events_);
    return out;
  }
  uint64_t EventsDropped() override { return 0; }
  const std::vector<Worker>& workers() override { return workers_; }
  std::vector<size_t> Reap() override {
    std::vector<size_t> out;
    out.swap(exited_);
    return out;
  }
  int StopWorkers(int64_t) override {
    ++stop_calls;
    for (Worker& w : workers_) w.running = false;
    return 0;
  }
  void Signal(pid_t pid, int sig) override { signals.push_back({pid, sig}); }
  char ProcessState(pid_t) override { return 'S'; }
  void CaptureStacks() override { ++stack_captures; }
  int64_t OomKills() override { return oom_kills; }
  FailureFacts DiagnoseFailure(const std::string& kind, int64_t step, json* incident) override {
    ++diagnoses;
    FailureFacts f = diagnosis;
    f.kind = kind;
    f.step = step;
    *incident = nullptr;
    return f;
  }
  void Sleep(int64_t ns) override { now += ns; }
  [[noreturn]] void ExitAsLostNode() override { std::abort(); }

  // Script helpers.
  // A new generation: every worker running again, the script's clock of ticks restarted.
  void Restart() {
    for (Worker& w : workers_) w.running = true;
    ticks = 0;
  }
  void Exit(int rank, int wait_status) {
    Worker& w = workers_[rank];
    w.running = false;
    w.wait_status = wait_status;
    w.exit_mono_ns = now;
    exited_.push_back(static_cast<size_t>(rank));
  }
  void Send(int rank, wire::EventKind kind, int64_t step) {
    wire::ParsedEvent e;
    e.kind = kind;
    e.rank = rank;
    e.claimed_pid = workers_[rank].pid;
    e.step = step;
    e.time_ns = WallNowNs() + (now - kT0);
    events_.push_back(e);
  }

  int64_t now = kT0;
  int64_t ticks = 0;
  int stop_signal = 0;
  int stop_calls = 0;
  int stack_captures = 0;
  int64_t oom_kills = -1;
  int diagnoses = 0;
  FailureFacts diagnosis;  // what DiagnoseFailure returns
  std::vector<std::pair<pid_t, int>> signals;
  std::function<void(FakeHost&)> on_tick;

 private:
  std::vector<Worker> workers_;
  std::vector<size_t> exited_;
  std::vector<wire::ParsedEvent> events_;
};

// The store: which restarts were requested; what Poll and AllDone answer.
class FakeRendezvous final : public Rendezvous {
 public:
  Result<Assignment> Join(int64_t, int64_t, const std::function<bool()>&) override {
    return UnavailableError("not used");
  }
  Result<bool> RequestRestart(int64_t, const json& reason) override {
    restarts.push_back(reason);
    return true;
  }
  Result<Health> Poll(const Assignment&) override { return health; }
  Status MarkDone(const Assignment&) override {
    ++mark_done_calls;
    return OkStatus();
  }
  Result<bool> AllDone(const Assignment&) override { return all_done; }
  Status PublishStats(const Assignment&, const std::map<int, double>&) override {
    return OkStatus();
  }
  Result<std::map<int, double>> ReadStats(const Assignment&) override {
    return std::map<int, double>{};
  }
  void Leave() override {}
  void Abandon() override {}

  std::vector<json> restarts;
  Health health;
  bool all_done = true;
  int mark_done_calls = 0;
};

class MonitorTest : public ::testing::Test {
 protected:
  MonitorTest() {
    options_.nproc_per_node = 2;
    options_.node_id = "node-a";
    options_.hang.floor_ns = 3 * kNsPerSecond;
    options_.hang.startup_timeout_ns = 60 * kNsPerSecond;
    options_.quiet = true;
    assignment_.world_size = 2;
    assignment_.members = {"node-a"};
  }

  // Runs one generation on `host` and returns how it ended.
  Outcome RunGeneration(FakeHost& host) {
    EXPECT_TRUE(log_.Open("", options_.node_id, kT0).ok());
    ledger_.Start(Phase::kWaiting, kT0);
    RunOutputs outputs(options_, kT0, log_, ledger_);
    RestartBudget budget(options_.restart);
    Monitor monitor(options_, kT0, host, log_, ledger_, rdzv_, outputs, budget, nullptr);
    return monitor.Run(assignment_, WallNowNs() - kNsPerSecond);
  }

  // The logged events of `type`.
  std::vector<json> Logged(const std::string& type) const {
    std::vector<json> out;
    for (const json& e : log_.recent()) {
      if (e.value("type", "") == type) out.push_back(e);
    }
    return out;
  }

  RunOptions options_;
  FakeHost host_for_two_{2};
  Assignment assignment_;
  RunLog log_;
  GoodputLedger ledger_;
  FakeRendezvous rdzv_;
};

TEST_F(MonitorTest, NonZeroExitIsACrashThatRestartsTheJob) {
  FakeHost host(2);
  host.on_tick = [](FakeHost& h) {
    if (h.ticks == 5) h.Exit(1, ExitCode(3));
  };
  EXPECT_EQ(RunGeneration(host), Outcome::kRestart);
  ASSERT_EQ(rdzv_.restarts.size(), 1u);
  EXPECT_EQ(rdzv_.restarts[0]["reason"], "crash");
  EXPECT_EQ(rdzv_.restarts[0]["detail"], "rank 1 exit code 3");
  EXPECT_EQ(host.stop_calls, 1);
  EXPECT_EQ(host.ticks, 5);  // decided in the tick that reaped the exit
  ASSERT_EQ(Logged("crash").size(), 1u);
  EXPECT_EQ(Logged("crash")[0]["rank"], 1);
  ASSERT_EQ(Logged("decision").size(), 1u);
  EXPECT_EQ(Logged("decision")[0]["action"], "restart");
  EXPECT_EQ(Logged("decision")[0]["reason"], "crash");
}

// With no restart left (--max-restarts 0) the decision says "stop": it said "restart" just
// before the supervisor gave up.
TEST_F(MonitorTest, ACrashWithNoRestartLeftIsDecidedAsAStop) {
  options_.restart.max_restarts = 0;
  FakeHost host(2);
  host.on_tick = [](FakeHost& h) {
    if (h.ticks == 2) h.Exit(0, ExitCode(1));
  };
  EXPECT_EQ(RunGeneration(host), Outcome::kFatal);  // the job ends on this decision
  ASSERT_EQ(Logged("decision").size(), 1u);
  EXPECT_EQ(Logged("decision")[0]["action"], "stop");
}

TEST_F(MonitorTest, SignalDeathIsBlamedBeforeAnExitCodeOfTheSameTick) {
  FakeHost host(2);
  host.on_tick = [](FakeHost& h) {
    if (h.ticks != 3) return;
    h.Exit(0, ExitCode(1));        // a consequence...
    h.Exit(1, KilledBy(SIGKILL));  // ...of this
  };
  EXPECT_EQ(RunGeneration(host), Outcome::kRestart);
  ASSERT_EQ(rdzv_.restarts.size(), 1u);
  EXPECT_EQ(rdzv_.restarts[0]["evidence"]["rank"], 1);
}

TEST_F(MonitorTest, EveryWorkerExitingZeroEndsTheRunWhenEveryNodeIsDone) {
  FakeHost host(2);
  rdzv_.all_done = false;
  host.on_tick = [this](FakeHost& h) {
    if (h.ticks == 2) h.Exit(0, ExitCode(0));
    if (h.ticks == 4) h.Exit(1, ExitCode(0));
    if (h.ticks == 10) rdzv_.all_done = true;  // the other nodes finished
  };
  EXPECT_EQ(RunGeneration(host), Outcome::kSucceeded);
  EXPECT_EQ(host.ticks, 10);
  EXPECT_EQ(rdzv_.mark_done_calls, 1);
  EXPECT_TRUE(rdzv_.restarts.empty());
  EXPECT_EQ(Logged("exit").size(), 2u);
  EXPECT_EQ(host.stop_calls, 0);
}

TEST_F(MonitorTest, RankSilentPastTheHangBoundIsAHang) {
  FakeHost host(2);
  int64_t rank1_last_progress = 0;
  host.on_tick = [&](FakeHost& h) {
    // Both ranks step every 5 ticks (100 ms); rank 1 stops after 2 s, rank 0 goes on.
    if (h.ticks % 5 != 0) return;
    const int64_t step = h.ticks / 5;
    for (int rank : {0, 1}) {
      if (rank == 1 && h.now - kT0 > 2 * kNsPerSecond) continue;
      h.Send(rank, wire::EventKind::kStepBegin, step);
      h.Send(rank, wire::EventKind::kStepEnd, step);
      if (rank == 1) rank1_last_progress = h.now;
    }
  };
  EXPECT_EQ(RunGeneration(host), Outcome::kRestart);
  ASSERT_EQ(rdzv_.restarts.size(), 1u);
  EXPECT_EQ(rdzv_.restarts[0]["reason"], "hang");
  EXPECT_EQ(rdzv_.restarts[0]["evidence"]["rank"], 1);
  // Not before the 3 s bound, and within a tick after it.
  const int64_t silent = host.now - rank1_last_progress;
  EXPECT_GT(silent, options_.hang.floor_ns);
  EXPECT_LE(silent, options_.hang.floor_ns + 20 * kNsPerMs);
  EXPECT_EQ(host.stack_captures, 1);
  EXPECT_EQ(host.stop_calls, 1);
  ASSERT_EQ(Logged("hang").size(), 1u);
}

TEST_F(MonitorTest, HeartbeatsInALongStepAreProgressAndAStopSignalPreempts) {
  FakeHost host(2);
  host.on_tick = [](FakeHost& h) {
    // Steps for 1 s (the 3 s bound applies from then on), then one long step with heartbeats.
    if (h.ticks % 5 == 0) {
      const bool stepping = h.now - kT0 <= kNsPerSecond;
      for (int rank : {0, 1}) {
        if (stepping) h.Send(rank, wire::EventKind::kStepEnd, h.ticks / 5);
        h.Send(rank, stepping ? wire::EventKind::kStepBegin : wire::EventKind::kHeartbeat,
               h.ticks / 5);
      }
    }
    if (h.now - kT0 >= 20 * kNsPerSecond) h.stop_signal = SIGTERM;
  };
  EXPECT_EQ(RunGeneration(host), Outcome::kPreempted);
  EXPECT_GE(host.now - kT0, 20 * kNsPerSecond);
  EXPECT_TRUE(rdzv_.restarts.empty());
  EXPECT_EQ(host.stack_captures, 0);
  EXPECT_EQ(host.stop_calls, 0);  // stopping on preemption is the supervisor's
}

TEST_F(MonitorTest, StopSignalAfterLocalSuccessKeepsTheResult) {
  FakeHost host(2);
  rdzv_.all_done = false;
  host.on_tick = [](FakeHost& h) {
    if (h.ticks == 2) {
      h.Exit(0, ExitCode(0));
      h.Exit(1, ExitCode(0));
    }
    if (h.ticks == 8) h.stop_signal = SIGTERM;
  };
  EXPECT_EQ(RunGeneration(host), Outcome::kSucceededLocally);
  EXPECT_TRUE(rdzv_.restarts.empty());
}

TEST_F(MonitorTest, AnotherNodesRestartIsFollowedWithoutClaimingIt) {
  FakeHost host(2);
  host.on_tick = [this](FakeHost& h) {
    if (h.ticks == 3) {
      rdzv_.health.restart = true;
      rdzv_.health.reason = {{"reason", "hang"}, {"node", "node-b"}, {"gen", 1}};
    }
  };
  EXPECT_EQ(RunGeneration(host), Outcome::kRestart);
  EXPECT_TRUE(rdzv_.restarts.empty());
  EXPECT_EQ(host.stop_calls, 1);
  ASSERT_EQ(Logged("decision").size(), 1u);
  EXPECT_EQ(Logged("decision")[0]["by"], "node-b");
}

TEST_F(MonitorTest, InjectedCrashKillsTheRankAtItsStep) {
  auto injection = ParseInjection("crash@rank=1,step=3");
  ASSERT_TRUE(injection.ok()) << injection.status().ToString();
  options_.injections = {*injection};
  FakeHost host(2);
  host.on_tick = [](FakeHost& h) {
    if (h.ticks <= 5) h.Send(1, wire::EventKind::kStepBegin, h.ticks);
    if (h.ticks == 6) h.Exit(1, KilledBy(SIGKILL));
  };
  EXPECT_EQ(RunGeneration(host), Outcome::kRestart);
  ASSERT_EQ(host.signals.size(), 1u);
  EXPECT_EQ(host.signals[0], std::make_pair(pid_t{1001}, SIGKILL));
  ASSERT_EQ(Logged("crash").size(), 1u);
  EXPECT_TRUE(Logged("crash")[0].contains("detection_ms"));
}

// One failure, one decision, following the diagnosis: the same diagnosed user error at the same
// step in the next generation stops the job instead of spending the restart budget.
TEST_F(MonitorTest, TheSameDiagnosedFailureTwiceStopsTheJob) {
  ASSERT_TRUE(log_.Open("", options_.node_id, kT0).ok());
  ledger_.Start(Phase::kWaiting, kT0);
  RunOutputs outputs(options_, kT0, log_, ledger_);
  RestartBudget budget(options_.restart);
  Monitor monitor(options_, kT0, host_for_two_, log_, ledger_, rdzv_, outputs, budget, nullptr);
  FakeHost& host = host_for_two_;
  host.diagnosis.diagnosed = true;
  host.diagnosis.fault = diagnose::FaultClass::kUserCode;
  host.diagnosis.action = diagnose::Action::kFixCode;
  host.diagnosis.root_text = "ValueError: bad config";
  host.diagnosis.signature = FailureSignature("python_exception", host.diagnosis.root_text);
  host.on_tick = [](FakeHost& h) {
    if (h.ticks == 3) h.Exit(1, ExitCode(1));
  };
  EXPECT_EQ(monitor.Run(assignment_, WallNowNs()), Outcome::kRestart);
  host.Restart();
  EXPECT_EQ(monitor.Run(assignment_, WallNowNs()), Outcome::kFatal);
  EXPECT_EQ(host.diagnoses, 2);
  auto decisions = Logged("decision");
  ASSERT_EQ(decisions.size(), 2u);
  EXPECT_EQ(decisions[0]["action"], "restart");
  EXPECT_EQ(decisions[1]["action"], "stop");
  EXPECT_EQ(decisions[1]["class"], "user_code");
  EXPECT_NE(decisions[1]["why"].get<std::string>().find("deterministic"), std::string::npos);
}

// A SIGKILL the job's cgroup counted as an OOM kill says so in the crash event.
TEST_F(MonitorTest, CrashCarriesTheCgroupsOomKills) {
  FakeHost host(2);
  host.oom_kills = 4;
  host.on_tick = [](FakeHost& h) {
    if (h.ticks == 2) {
      h.oom_kills = 5;
      h.Exit(0, KilledBy(SIGKILL));
    }
  };
  EXPECT_EQ(RunGeneration(host), Outcome::kRestart);
  ASSERT_EQ(Logged("crash").size(), 1u);
  EXPECT_EQ(Logged("crash")[0]["oom_kills"], 1);
}

}  // namespace
}  // namespace titan::supervisor
