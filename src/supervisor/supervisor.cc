// The Supervisor: titan run's orchestration (setup, rendezvous, spawning, the restart budget,
// preemption, the end of the run). Each generation is watched by a Monitor (monitor.h), which
// decides through Recovery (recovery.h); RankEvents (rank_events.h) follows the ranks' events
// and injections; RunOutputs (run_outputs.h) writes the metrics, steps, prefetch reports,
// ledger and summary. ProcessHost below is the Monitor's view of the real processes.
#include "src/supervisor/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/client/event_receiver.h"
#include "src/client/wire.h"
#include "src/cluster/slurm.h"
#include "src/supervisor/event_queue.h"
#include "src/supervisor/failure_evidence.h"
#include "src/supervisor/ledger.h"
#include "src/supervisor/leftovers.h"
#include "src/supervisor/monitor.h"
#include "src/supervisor/monitor_host.h"
#include "src/supervisor/rank_logs.h"
#include "src/supervisor/rendezvous.h"
#include "src/supervisor/run_log.h"
#include "src/supervisor/run_outputs.h"
#include "src/supervisor/stack_capture.h"
#include "src/supervisor/worker_env.h"
#include "src/supervisor/worker_group.h"

extern char** environ;

namespace titan::supervisor {
namespace {

using nlohmann::json;

// The node's name for the scheduler: Slurm's, Kubernetes' (downward API), or the hostname.
std::string DefaultSchedulerNode() {
  for (const char* var : {"SLURMD_NODENAME", "NODE_NAME"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') return v;
  }
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

std::string DefaultNodeId() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return fmt::format("{}-{}", host, ::getpid());
}

// The Monitor's host on a real node: CLOCK_MONOTONIC, the signals through a signalfd, the step
// events through the EventQueue, the workers in a WorkerGroup. Owns the queue, the group and the
// signalfd. Used from the thread that called Open() only (the queue's Push excepted).
class ProcessHost final : public MonitorHost {
 public:
  ProcessHost(const RunOptions& o, RunLog& log)
      : o_(o), log_(log), workers_(WorkerGroupOptions{.memory_max_bytes = o.memory_max_bytes}) {}
  ~ProcessHost() override {
    if (sigfd_ >= 0) ::close(sigfd_);
  }

  // Every signal goes to the loop through a signalfd; threads started after this inherit the
  // mask. Makes this process a child subreaper.
  Status Open() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, sig);
    if (::pthread_sigmask(SIG_BLOCK, &mask, nullptr) != 0) return InternalError("pthread_sigmask");
    sigfd_ = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigfd_ < 0) return ErrnoError(errno, "signalfd");
    ::signal(SIGPIPE, SIG_IGN);
    // Orphaned grandchildren of workers re-parent to us and are reaped (no zombies, no escape).
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (o_.rank_logs) {
      rank_logs_ = std::make_unique<RankLogs>(RankLogOptions{
          o_.log_dir.empty() ? o_.run_dir + "/ranks" : o_.log_dir, o_.rank_log_bytes});
    }
    return OkStatus();
  }

  // Starts one worker of `generation`: its output into the rank logs, the Flight Recorder on.
  Status SpawnWorker(WorkerSpec spec, int64_t generation) {
    if (o_.flight_recorder) {
      const std::string dir = FlightRecorderDir(generation);
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      for (std::string& e : FlightRecorderEnv(spec.env, dir)) spec.env.push_back(std::move(e));
    }
    if (rank_logs_) {
      TITAN_ASSIGN_OR_RETURN(WorkerPipes pipes,
                             rank_logs_->Open(spec.rank, spec.local_rank, generation));
      spec.stdout_fd = pipes.stdout_fd;
      spec.stderr_fd = pipes.stderr_fd;
    }
    Status spawned = workers_.Spawn(spec);
    if (rank_logs_) {
      if (spawned.ok()) {
        rank_logs_->Started(spec.rank, generation, workers_.workers().back().pid);
      } else {
        rank_logs_->Abandon(spec.rank, generation);
      }
    }
    return spawned;
  }
  void StartGeneration(int64_t generation, int64_t wall_start_ns) {
    generation_ = generation;
    generation_wall_start_ns_ = wall_start_ns;
  }
  RankLogs* rank_logs() { return rank_logs_.get(); }
  // For the node-loss drill (ExitAsLostNode).
  void set_rendezvous(Rendezvous* rdzv) { rdzv_ = rdzv; }

  int64_t Now() override { return MonoNowNs(); }
  int WaitForInput(int64_t timeout_ns) override {
    pollfd fds[2] = {{sigfd_, POLLIN, 0}, {queue_.fd(), POLLIN, 0}};
    ::poll(fds, 2, static_cast<int>(timeout_ns / kNsPerMs));
    ReadSignals();
    return stop_signal_;
  }
  std::vector<wire::ParsedEvent> DrainEvents() override { return queue_.Drain(); }
  uint64_t EventsDropped() override { return queue_.dropped(); }
  const std::vector<Worker>& workers() override { return workers_.workers(); }
  std::vector<size_t> Reap() override { return workers_.Reap(); }
  int StopWorkers(int64_t grace_ns) override { return workers_.Stop(grace_ns); }
  void Signal(pid_t pid, int sig) override { ::kill(pid, sig); }
  char ProcessState(pid_t pid) override { return ProcState(pid); }
  void CaptureStacks() override {
    if (o_.flight_recorder) {
      std::vector<int> ranks;
      for (const Worker& w : workers_.workers()) {
        if (w.running) ranks.push_back(w.rank);
      }
      DumpRequest r =
          RequestFlightRecorderDumps(FlightRecorderDir(generation_), ranks, o_.dump_wait_ns);
      log_.Write("flight_recorder", {{"dir", FlightRecorderDir(generation_)},
                                     {"pipes", r.pipes},
                                     {"dumps", r.dumps},
                                     {"waited_s", r.waited_s},
                                     {"note", r.pipes == 0 ? "no rank had a dump pipe (the Flight "
                                                             "Recorder needs NCCL process groups)"
                                                           : ""}});
    }
    supervisor::CaptureStacks(workers_.workers(), o_.run_dir, o_.stack_wait_ns, log_);
  }
  int64_t OomKills() override { return workers_.cgroup().OomKills(); }
  FailureFacts DiagnoseFailure(const std::string& kind, int64_t step,
                               nlohmann::json* incident) override {
    FailureFacts facts;
    facts.kind = kind;
    facts.step = step;
    *incident = nullptr;
    if (!o_.diagnose) return facts;
    std::vector<std::string> files;
    if (rank_logs_) {
      rank_logs_->Drain(generation_, 2 * kNsPerSecond);  // what the workers wrote as they went
      files = rank_logs_->Files(generation_);
    }
    files.push_back(log_.path());
    const std::string kernel = fmt::format("{}/kernel.gen{}.log", o_.run_dir, generation_);
    auto lines = CaptureKernelLog(kernel, generation_wall_start_ns_ - kNsPerSecond, 4 << 20);
    if (lines.ok()) {
      if (*lines > 0) files.push_back(kernel);
    } else if (!kernel_log_warned_) {
      kernel_log_warned_ = true;
      log_.Write(
          "warning",
          {{"what", fmt::format("the kernel log is not read: {}", lines.status().message())}});
    }
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(FlightRecorderDir(generation_), ec)) {
      if (e.is_regular_file()) files.push_back(e.path().string());
    }
    std::vector<int64_t> pids;
    for (const Worker& w : workers_.workers()) pids.push_back(w.pid);
    return supervisor::DiagnoseFailure(files, generation_wall_start_ns_, kind, step, kernel, pids,
                                       incident);
  }
  void Sleep(int64_t ns) override { ::usleep(static_cast<useconds_t>(ns / kNsPerUs)); }
  [[noreturn]] void ExitAsLostNode() override {
    // The whole node disappears: its workers die and its lease is no longer refreshed.
    for (size_t i = 0; i < workers_.workers().size(); ++i) workers_.SignalGroup(i, SIGKILL);
    workers_.WaitAll(5 * kNsPerSecond);
    if (rdzv_ != nullptr) rdzv_->Abandon();
    log_.Write("exit", {{"reason", "node-loss injected: exiting without releasing the lease"}});
    std::fflush(nullptr);
    ::_exit(137);
  }

  WorkerGroup& group() { return workers_; }
  EventQueue& queue() { return queue_; }
  int stop_signal() const { return stop_signal_; }
  // Reads the signals and reaps; true once a stop signal came.
  bool PendingStop() {
    ReadSignals();
    workers_.Reap();
    return stop_signal_ != 0;
  }
  // Sleeps `ns` unless a stop signal comes first; false then.
  bool SleepInterruptible(int64_t ns) {
    int64_t deadline = MonoNowNs() + ns;
    while (MonoNowNs() < deadline) {
      pollfd fd = {sigfd_, POLLIN, 0};
      ::poll(&fd, 1, static_cast<int>(std::max<int64_t>((deadline - MonoNowNs()) / kNsPerMs, 1)));
      if (PendingStop()) return false;
    }
    return true;
  }

 private:
  void ReadSignals() {
    signalfd_siginfo si;
    while (::read(sigfd_, &si, sizeof(si)) == sizeof(si)) {
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP) {
        stop_signal_ = static_cast<int>(si.ssi_signo);
      }
    }
  }

  std::string FlightRecorderDir(int64_t generation) const {
    return fmt::format("{}/fr/gen{}", o_.run_dir, generation);
  }

  const RunOptions& o_;
  RunLog& log_;
  Rendezvous* rdzv_ = nullptr;
  EventQueue queue_;
  WorkerGroup workers_;
  std::unique_ptr<RankLogs> rank_logs_;  // declared after workers_: destroyed before them
  int64_t generation_ = 0;
  int64_t generation_wall_start_ns_ = 0;
  bool kernel_log_warned_ = false;
  int sigfd_ = -1;
  int stop_signal_ = 0;
};

class Supervisor {
 public:
  explicit Supervisor(const RunOptions& o)
      : o_(o),
        start_ns_(MonoNowNs()),
        budget_(o.restart),
        outputs_(o_, start_ns_, log_, ledger_),
        host_(o_, log_) {}

  int Run() {
    Status s = Setup();
    if (!s.ok()) {
      Log(LogLevel::kError, "run", "{}", s.message());
      return 1;
    }
    ledger_.Start(Phase::kWaiting, start_ns_);
    log_.Write("start", {{"job", o_.job_id},
                         {"command", o_.command},
                         {"nproc_per_node", o_.nproc_per_node},
                         {"min_nodes", o_.min_nodes},
                         {"max_nodes", o_.max_nodes},
                         {"etcd", o_.etcd},
                         {"socket", socket_path_},
                         {"pid", ::getpid()}});
    if (std::optional<int> drained = DrainIfRisky()) return *drained;
    Recovery& recovery = monitor_->recovery();
    int64_t after_gen = -1;
    while (true) {
      ledger_.Enter(Phase::kWaiting, MonoNowNs());
      int64_t join_start = MonoNowNs();
      // The wait polls `stop`: isolation outcomes are reported meanwhile too (an excluded node
      // waits here while its drain runs).
      auto joined = rdzv_->Join(after_gen, recovery.excluded_until_ns(), [this, &recovery] {
        recovery.ReportIsolations();
        return host_.PendingStop();
      });
      if (!joined.ok()) {
        if (host_.stop_signal() != 0) return Preempt();
        log_.Write("decision",
                   {{"action", "give-up"}, {"reason", std::string(joined.status().message())}});
        Log(LogLevel::kError, "run", "{}", joined.status().message());
        return Finish(1);
      }
      Assignment a = std::move(joined).value();
      if (a.job_done) {
        log_.Write("finish", {{"reason", "the job finished on the other nodes"}});
        return Finish(0);
      }
      int64_t joined_ns = MonoNowNs();
      log_.Write("rendezvous", {{"generation", a.generation},
                                {"group_rank", a.group_rank},
                                {"nnodes", a.nnodes},
                                {"world_size", a.world_size},
                                {"members", a.members},
                                {"master", fmt::format("{}:{}", a.master_addr, a.master_port)},
                                {"waited_s", NsToSeconds(joined_ns - join_start)}});
      // Spawning the first generation is start-up; spawning any later one is part of a restart.
      ledger_.Enter(after_gen < 0 ? Phase::kStartup : Phase::kRestart, joined_ns);
      outputs_.StartPrefetch(a);
      Status spawned = Spawn(a);
      if (!spawned.ok()) {
        log_.Write("decision", {{"action", "give-up"}, {"reason", std::string(spawned.message())}});
        Log(LogLevel::kError, "run", "{}", spawned.message());
        host_.group().Stop(0);
        rdzv_->RequestRestart(a.generation, {{"reason", "spawn-failed"}}).status().IgnoreError();
        return Finish(1);
      }
      int64_t exec_ns = MonoNowNs();
      if (recovery.detect_ns() > 0) {
        log_.Write("restart", {{"generation", a.generation},
                               {"restart_count", restart_count_},
                               {"detect_to_exec_ms", (exec_ns - recovery.detect_ns()) / 1e6},
                               {"stop_ms", monitor_->stop_ns() / 1e6},
                               {"backoff_ms", backoff_ns_ / 1e6},
                               {"rendezvous_ms", (joined_ns - join_start) / 1e6},
                               {"spawn_ms", (exec_ns - joined_ns) / 1e6}});
        recovery.clear_detect_ns();
      }
      ledger_.Enter(Phase::kStartup, exec_ns);
      after_gen = a.generation;
      Outcome outcome = monitor_->Run(a, gen_wall_start_ns_);
      if (outcome == Outcome::kSucceeded) {
        log_.Write("finish", {{"reason", "every worker exited 0"}, {"generation", a.generation}});
        return Finish(0);
      }
      if (outcome == Outcome::kSucceededLocally) {
        log_.Write("finish", {{"reason", monitor_->finish_reason()}, {"generation", a.generation}});
        Log(LogLevel::kWarning, "run", "{}", monitor_->finish_reason());
        return Finish(0);
      }
      if (outcome == Outcome::kPreempted) return Preempt();
      if (outcome == Outcome::kFatal) return Finish(1);
      // kRestart: the workers are stopped.
      if (budget_.Exhausted()) {
        // The failure's own decision said "stop" already; one failure gets one decision.
        log_.Write(
            "finish",
            {{"reason", fmt::format("restart budget of {} spent", o_.restart.max_restarts)}});
        return Finish(1);
      }
      backoff_ns_ = budget_.Take();
      ++restart_count_;
      ledger_.OnRestart();
      if (backoff_ns_ > 0 && !host_.SleepInterruptible(backoff_ns_)) return Preempt();
    }
  }

 private:
  Status Setup() {
    if (o_.node_id.empty()) o_.node_id = DefaultNodeId();
    if (o_.scheduler_node.empty()) o_.scheduler_node = DefaultSchedulerNode();
    if (!o_.slurm_job_id.empty() && o_.slurm_watch_interval_ns > 0) {
      slurm_watch_ = std::make_unique<cluster::SlurmNodeWatch>(
          o_.scheduler_node, o_.slurm_watch_interval_ns, o_.isolate_timeout_ns);
    }
    if (o_.node_addr.empty()) {
      if (o_.etcd.empty()) {
        o_.node_addr = "127.0.0.1";
      } else {
        char host[256] = {0};
        ::gethostname(host, sizeof(host) - 1);
        o_.node_addr = host;
      }
    }
    if (o_.run_dir.empty()) o_.run_dir = fmt::format("/tmp/titan-run-{}-{}", o_.job_id, ::getpid());
    std::error_code ec;
    std::filesystem::create_directories(o_.run_dir, ec);
    if (ec) return InvalidArgumentError("creating --run-dir " + o_.run_dir + ": " + ec.message());
    if (!o_.log_dir.empty()) {
      std::filesystem::create_directories(o_.log_dir, ec);
      if (ec) return InvalidArgumentError("creating --log-dir " + o_.log_dir + ": " + ec.message());
    }
    if (o_.event_log.empty()) o_.event_log = o_.run_dir + "/events.jsonl";
    if (o_.ledger_json.empty()) o_.ledger_json = o_.run_dir + "/ledger.json";
    TITAN_RETURN_IF_ERROR(log_.Open(o_.event_log, o_.node_id, start_ns_));
    TITAN_RETURN_IF_ERROR(CleanUpAfterDeadRun());
    TITAN_RETURN_IF_ERROR(host_.Open());

    socket_path_ = o_.run_dir + "/run.sock";
    EventReceiverOptions ro;
    ro.socket_path = socket_path_;
    ro.on_event = [this](const wire::ParsedEvent& e) { host_.queue().Push(e); };
    ro.socket_mode = 0600;
    auto receiver = EventReceiver::Start(std::move(ro));
    if (!receiver.ok()) return receiver.status().WithContext("starting the step-event socket");
    receiver_ = std::move(receiver).value();

    if (o_.etcd.empty() && o_.plan.has_value()) {
      StaticPlan plan = *o_.plan;
      plan.nproc = o_.nproc_per_node;
      rdzv_ = MakeStaticRendezvous(std::move(plan));
    } else if (o_.etcd.empty()) {
      if (o_.max_nodes > 1) {
        return InvalidArgumentError(
            "--nnodes > 1 needs --etcd http://HOST:PORT (or --rdzv-endpoint) so that the nodes "
            "can find each other");
      }
      rdzv_ = MakeLocalRendezvous(o_.node_addr, o_.nproc_per_node);
    } else {
      EtcdRendezvousOptions eo;
      eo.endpoint = o_.etcd;
      eo.job_id = o_.job_id;
      eo.self = NodeInfo{o_.node_id, o_.node_addr, o_.nproc_per_node, o_.scheduler_node};
      eo.min_nodes = o_.min_nodes;
      eo.max_nodes = o_.max_nodes;
      eo.lease_ttl_seconds = o_.lease_ttl_seconds;
      eo.last_call_ns = o_.last_call_ns;
      eo.join_timeout_ns = o_.join_timeout_ns;
      eo.risk = o_.risk;
      TITAN_ASSIGN_OR_RETURN(rdzv_, MakeEtcdRendezvous(eo));
    }
    host_.set_rendezvous(rdzv_.get());
    TITAN_RETURN_IF_ERROR(outputs_.StartEndpoint());
    base_env_ = BaseWorkerEnv(o_, socket_path_, environ);
    monitor_ = std::make_unique<Monitor>(o_, start_ns_, host_, log_, ledger_, *rdzv_, outputs_,
                                         budget_, slurm_watch_.get());
    return OkStatus();
  }

  // What a titan run killed together with its guardian left in this run dir (leftovers.h) is
  // killed now and reported; then our own record is kept there.
  Status CleanUpAfterDeadRun() {
    const std::string path = o_.run_dir + "/" + kLeftoversFile;
    auto cleanup = CleanUpLeftovers(path);
    if (cleanup.status().code() == StatusCode::kFailedPrecondition) return cleanup.status();
    if (!cleanup.ok()) {
      Log(LogLevel::kWarning, "run", "{} (ignored)", cleanup.status().ToString());
    } else if (cleanup->found) {
      const LeftoversCleanup& c = *cleanup;
      log_.Write("cleanup", {{"previous_pid", c.previous_pid},
                             {"killed_groups", c.killed_groups},
                             {"killed_processes", c.killed_processes},
                             {"cgroup", c.cgroup_dir},
                             {"cgroup_processes", c.cgroup_processes},
                             {"cgroup_removed", c.cgroup_removed},
                             {"message", c.Describe()}});
      Log(LogLevel::kWarning, "run", "{}", c.Describe());
    }
    host_.group().SetLeftoversRecord(path);
    return OkStatus();
  }

  Status Spawn(const Assignment& a) {
    current_ = a;
    gen_wall_start_ns_ = WallNowNs();
    WorkerGroup& workers = host_.group();
    workers.Clear();
    host_.StartGeneration(a.generation, gen_wall_start_ns_);
    for (int lr = 0; lr < o_.nproc_per_node; ++lr) {
      TITAN_RETURN_IF_ERROR(
          host_.SpawnWorker(WorkerSpecFor(o_, a, lr, base_env_, restart_count_), a.generation));
    }
    json pids = json::array();
    for (const Worker& w : workers.workers()) pids.push_back({{"rank", w.rank}, {"pid", w.pid}});
    log_.Write("spawn", {{"generation", a.generation},
                         {"host", o_.scheduler_node},
                         {"workers", pids},
                         {"restart_count", restart_count_},
                         {"restart_reason", ReasonText(a.reason)}});
    if (o_.risk) {
      json advice = RecommendedInterval(o_, a).ToJson();
      advice["generation"] = a.generation;
      advice["nodes"] = a.members;
      advice["env"] = "TITAN_CHECKPOINT_INTERVAL_S";
      log_.Write("checkpoint_interval", std::move(advice));
    }
    return OkStatus();
  }

  // --drain-risk: a node whose failure risk crosses the threshold stays out of the job (a spare
  // takes its place) when the work its failure is expected to cost exceeds the cost of moving
  // it. The arithmetic is in the `drain` event. Returns the exit code when it drains.
  std::optional<int> DrainIfRisky() {
    if (!o_.risk || o_.drain_risk <= 0) return std::nullopt;
    Assignment alone;
    alone.members = {o_.node_id};
    const double interval = RecommendedInterval(o_, alone).daly_seconds;
    const double gpus = static_cast<double>(o_.max_nodes) * o_.nproc_per_node;
    predict::DrainAdvice d = predict::AdviseDrain(
        o_.risk->P(o_.node_id), o_.drain_risk, gpus, interval,
        static_cast<double>(o_.move_cost_ns) / 1e9, static_cast<double>(o_.move_cost_ns) / 1e9);
    json fields = d.ToJson();
    fields["node"] = o_.node_id;
    fields["horizon_h"] = o_.risk->horizon_seconds() / 3600;
    log_.Write("drain", fields);
    if (!d.drain) return std::nullopt;
    log_.Write("decision", {{"action", "drain"}, {"reason", fields["arithmetic"]}});
    Log(LogLevel::kWarning, "run", "draining node {} before it fails: {}", o_.node_id,
        fields["arithmetic"].get<std::string>());
    return 0;
  }

  // SIGTERM/SIGINT/SIGHUP to titan run: ask the workers to checkpoint and exit (SIGTERM
  // forwarded), wait the grace period, then kill what is left.
  int Preempt() {
    int sig = host_.stop_signal() != 0 ? host_.stop_signal() : SIGTERM;
    WorkerGroup& workers = host_.group();
    int64_t t0 = MonoNowNs();
    log_.Write("preempt", {{"signal", sig}, {"grace_s", NsToSeconds(o_.term_grace_ns)}});
    ledger_.Enter(Phase::kCheckpoint, t0);
    workers.SignalAll(SIGTERM);
    workers.SignalAll(SIGCONT);
    // Keep reading events meanwhile: the final checkpoint is recorded.
    int64_t deadline = t0 + o_.term_grace_ns;
    bool clean = false;
    while (true) {
      monitor_->HandleEvents(host_.queue().Drain(), MonoNowNs());
      if (workers.WaitAll(50 * kNsPerMs)) {
        clean = true;
        break;
      }
      if (MonoNowNs() >= deadline) break;
    }
    ::usleep(20'000);  // datagrams sent just before exit
    monitor_->HandleEvents(host_.queue().Drain(), MonoNowNs());
    int killed = workers.Stop(0);
    log_.Write("stopped", {{"stop_ms", (MonoNowNs() - t0) / 1e6},
                           {"sigkilled", killed},
                           {"clean", clean && workers.AllSucceeded()}});
    if (current_.nnodes > 1) {
      rdzv_->RequestRestart(current_.generation, {{"reason", "preempted"}, {"detail", o_.node_id}})
          .status()
          .IgnoreError();
    }
    return Finish(sig == SIGINT ? 130 : 143);
  }

  int Finish(int code) {
    outputs_.EndPrefetch();
    outputs_.FlushSteps(MonoNowNs(), current_.generation, /*force=*/true);
    host_.group().Stop(0);
    // Isolation actions in flight are waited for (each is bounded), so their outcomes are in the
    // log and the ledger.
    Recovery& recovery = monitor_->recovery();
    if (!recovery.WaitIsolations(o_.isolate_timeout_ns + kNsPerSecond)) {
      log_.Write("warning", {{"what", "isolation actions still running at exit"}});
    }
    recovery.ReportIsolations();
    if (RankLogs* logs = host_.rank_logs()) outputs_.SetRankLogStats(logs->stats(), logs->dir());
    outputs_.SetVerdict(recovery.last_diagnosis(), recovery.last_decision());
    code = outputs_.Finish(code, MonoNowNs(), current_, host_.queue().dropped(), restart_count_);
    rdzv_->Leave();
    return code;
  }

  // Declaration order is destruction order reversed: the monitor goes first, the receiver
  // (which pushes into the host's queue) before the host, the host (which kills what is left of
  // the workers) before the log.
  RunOptions o_;
  const int64_t start_ns_;
  RunLog log_;
  GoodputLedger ledger_;
  RestartBudget budget_;
  RunOutputs outputs_;
  ProcessHost host_;
  std::unique_ptr<EventReceiver> receiver_;
  std::unique_ptr<Rendezvous> rdzv_;
  std::unique_ptr<cluster::SlurmNodeWatch> slurm_watch_;
  std::unique_ptr<Monitor> monitor_;  // from the end of Setup()
  Assignment current_;
  int64_t gen_wall_start_ns_ = 0;
  std::vector<std::string> base_env_;
  std::string socket_path_;
  int restart_count_ = 0;
  int64_t backoff_ns_ = 0;
};

}  // namespace

int RunSupervisor(const RunOptions& options) {
  Supervisor s(options);
  return s.Run();
}

}  // namespace titan::supervisor
