#include "src/supervisor/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "src/base/atomic_file.h"
#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/env.h"
#include "src/base/json_text.h"
#include "src/base/log.h"
#include "src/base/text.h"
#include "src/checkpoint/prefetch.h"
#include "src/client/event_receiver.h"
#include "src/client/wire.h"
#include "src/cluster/slurm.h"
#include "src/s3/config.h"
#include "src/supervisor/ledger.h"
#include "src/supervisor/leftovers.h"
#include "src/supervisor/metrics_endpoint.h"
#include "src/supervisor/native_stack.h"
#include "src/supervisor/rendezvous.h"
#include "src/supervisor/run_log.h"
#include "src/supervisor/step_window.h"
#include "src/supervisor/worker_group.h"

extern char** environ;

namespace titan::supervisor {
namespace {

using nlohmann::json;

constexpr size_t kMaxQueuedEvents = 65536;
constexpr int64_t kTickNs = 20 * kNsPerMs;
constexpr int64_t kSlowPeriodNs = 20 * kNsPerMs;
constexpr size_t kMaxStackBytes = 64 * 1024;
// eu-stack on the hung workers: usually tens of ms each; a thread in D state can make one wait
// forever. One budget for all the workers of a hang, so recovery waits for it at most once.
constexpr int64_t kNativeStackBudgetNs = int64_t{10} * 1'000'000'000;

// kSucceededLocally: every local worker exited 0 but the other nodes' completion could not be
// confirmed (the store unreachable, or a stop signal while waiting); finish_reason_ says which.
enum class Outcome { kSucceeded, kSucceededLocally, kRestart, kPreempted, kFatal };

// Events from the receiver thread to the loop: a bounded queue plus an eventfd to wake poll().
class EventQueue {
 public:
  EventQueue() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~EventQueue() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  void Push(const wire::ParsedEvent& e) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (events_.size() >= kMaxQueuedEvents) {
        ++dropped_;
        return;
      }
      events_.push_back(e);
    }
    uint64_t one = 1;
    ssize_t n = ::write(fd_, &one, sizeof(one));
    (void)n;
  }
  std::vector<wire::ParsedEvent> Drain() {
    uint64_t v;
    ssize_t n = ::read(fd_, &v, sizeof(v));
    (void)n;
    std::vector<wire::ParsedEvent> out;
    std::lock_guard<std::mutex> l(mu_);
    out.swap(events_);
    return out;
  }
  uint64_t dropped() {
    std::lock_guard<std::mutex> l(mu_);
    return dropped_;
  }

 private:
  int fd_;
  std::mutex mu_;
  std::vector<wire::ParsedEvent> events_;
  uint64_t dropped_ = 0;
};

// Per local worker, for this generation.
struct RankState {
  int64_t step = -1;               // last step begun
  int64_t step_begin_time_ns = 0;  // sender clock
  bool marked = false;             // a mark was seen within this step
  int64_t inject_mono_ns = 0;      // when an injection hit this rank (for detection latency)
  std::string inject_kind;
  // slow injection
  double slow_factor = 0;
  int64_t slow_until_step = -1;
  bool slow_stopped = false;
  int64_t slow_next_toggle_ns = 0;
};

std::string ProcField(pid_t pid, const char* file) {
  auto r = Env::ReadFile(fmt::format("/proc/{}/{}", pid, file), 64 * 1024);
  return r.ok() ? *r : std::string();
}

char ProcState(pid_t pid) {
  auto stat = ReadProcStat(pid);
  return stat.ok() ? stat->state : '?';
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

std::string ReadFrom(const std::string& path, int64_t offset, size_t max_bytes) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return "";
  std::fseek(f, offset, SEEK_SET);
  std::string out(max_bytes, '\0');
  size_t n = std::fread(out.data(), 1, max_bytes, f);
  std::fclose(f);
  out.resize(n);
  return out;
}

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

class Supervisor {
 public:
  explicit Supervisor(const RunOptions& o)
      : o_(o),
        start_ns_(MonoNowNs()),
        hang_(o.hang),
        straggler_(o.straggler),
        failures_(o.isolation),
        budget_(o.restart),
        injector_(o.injections, o.seed),
        isolation_(cluster::IsolationRunnerOptions{o.isolate_actions, o.isolate_timeout_ns,
                                                   o.isolate_dry_run}) {}

  ~Supervisor() {
    if (metrics_endpoint_) metrics_endpoint_->Stop();
    if (sigfd_ >= 0) ::close(sigfd_);
  }

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
    int64_t after_gen = -1;
    while (true) {
      ledger_.Enter(Phase::kWaiting, MonoNowNs());
      int64_t join_start = MonoNowNs();
      // The wait polls `stop`: isolation outcomes are reported meanwhile too (an excluded
      // node waits here while its drain runs).
      auto joined = rdzv_->Join(after_gen, excluded_until_ns_, [this] {
        ReportIsolations();
        return PendingStop();
      });
      if (!joined.ok()) {
        if (stop_signal_ != 0) return Preempt();
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
      StartPrefetch(a);
      Status spawned = Spawn(a);
      if (!spawned.ok()) {
        log_.Write("decision", {{"action", "give-up"}, {"reason", std::string(spawned.message())}});
        Log(LogLevel::kError, "run", "{}", spawned.message());
        workers_.Stop(0);
        rdzv_->RequestRestart(a.generation, {{"reason", "spawn-failed"}}).status().IgnoreError();
        return Finish(1);
      }
      int64_t exec_ns = MonoNowNs();
      if (detect_ns_ > 0) {
        log_.Write("restart", {{"generation", a.generation},
                               {"restart_count", restart_count_},
                               {"detect_to_exec_ms", (exec_ns - detect_ns_) / 1e6},
                               {"stop_ms", stop_ns_ / 1e6},
                               {"backoff_ms", backoff_ns_ / 1e6},
                               {"rendezvous_ms", (joined_ns - join_start) / 1e6},
                               {"spawn_ms", (exec_ns - joined_ns) / 1e6}});
        detect_ns_ = 0;
      }
      ledger_.Enter(Phase::kStartup, exec_ns);
      after_gen = a.generation;
      Outcome outcome = Monitor(a);
      if (outcome == Outcome::kSucceeded) {
        log_.Write("finish", {{"reason", "every worker exited 0"}, {"generation", a.generation}});
        return Finish(0);
      }
      if (outcome == Outcome::kSucceededLocally) {
        log_.Write("finish", {{"reason", finish_reason_}, {"generation", a.generation}});
        Log(LogLevel::kWarning, "run", "{}", finish_reason_);
        return Finish(0);
      }
      if (outcome == Outcome::kPreempted) return Preempt();
      if (outcome == Outcome::kFatal) return Finish(1);
      // kRestart: the workers are stopped.
      if (budget_.Exhausted()) {
        log_.Write(
            "decision",
            {{"action", "give-up"},
             {"reason", fmt::format("restart budget of {} spent", o_.restart.max_restarts)}});
        return Finish(1);
      }
      backoff_ns_ = budget_.Take();
      ++restart_count_;
      ledger_.OnRestart();
      if (backoff_ns_ > 0 && !SleepInterruptible(backoff_ns_)) return Preempt();
    }
  }

 private:
  // ---- setup -------------------------------------------------------------------------------
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

    // Every signal goes to the loop through a signalfd; threads started below inherit the mask.
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, sig);
    if (::pthread_sigmask(SIG_BLOCK, &mask, nullptr) != 0) return InternalError("pthread_sigmask");
    sigfd_ = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigfd_ < 0) return ErrnoError(errno, "signalfd");
    ::signal(SIGPIPE, SIG_IGN);
    // Orphaned grandchildren of workers re-parent to us and are reaped (no zombies, no escape).
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);

    socket_path_ = o_.run_dir + "/run.sock";
    EventReceiverOptions ro;
    ro.socket_path = socket_path_;
    ro.on_event = [this](const wire::ParsedEvent& e) { queue_.Push(e); };
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
      TITAN_ASSIGN_OR_RETURN(rdzv_, MakeEtcdRendezvous(eo));
    }
    if (o_.metrics_port > 0) {
      TITAN_ASSIGN_OR_RETURN(metrics_endpoint_, MetricsEndpoint::Start(o_.metrics_port));
    }
    BuildBaseEnv();
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
    workers_.SetLeftoversRecord(path);
    return OkStatus();
  }

  void BuildBaseEnv() {
    static const char* kOwned[] = {"RANK=",
                                   "LOCAL_RANK=",
                                   "WORLD_SIZE=",
                                   "LOCAL_WORLD_SIZE=",
                                   "MASTER_ADDR=",
                                   "MASTER_PORT=",
                                   "GROUP_RANK=",
                                   "GROUP_WORLD_SIZE=",
                                   "ROLE_RANK=",
                                   "ROLE_WORLD_SIZE=",
                                   "ROLE_NAME=",
                                   "TORCHELASTIC_RESTART_COUNT=",
                                   "TORCHELASTIC_MAX_RESTARTS=",
                                   "TORCHELASTIC_RUN_ID=",
                                   "TITAN_RESTART_COUNT=",
                                   "TITAN_RESTART_REASON=",
                                   "TITAN_GENERATION=",
                                   "TITAN_STACK_FILE=",
                                   "TITAN_AGENT_SOCKET=",
                                   "TITAN_NODE_ID="};
    std::string agent_sockets;
    bool has_omp = false;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string_view kv(*e);
      if (kv.starts_with("TITAN_AGENT_SOCKET=")) {
        agent_sockets = std::string(kv.substr(19));
        continue;
      }
      if (kv.starts_with("OMP_NUM_THREADS=")) has_omp = true;
      if (!o_.checkpoint_dir.empty() && kv.starts_with("TITAN_CHECKPOINT_DIR=")) continue;
      if (!o_.checkpoint_mirror.empty() && kv.starts_with("TITAN_CHECKPOINT_MIRROR=")) continue;
      bool owned = false;
      for (const char* p : kOwned) owned |= kv.starts_with(p);
      if (!owned) base_env_.emplace_back(kv);
    }
    if (!has_omp) base_env_.emplace_back("OMP_NUM_THREADS=1");  // as torchrun does
    if (!o_.checkpoint_dir.empty())
      base_env_.push_back("TITAN_CHECKPOINT_DIR=" + o_.checkpoint_dir);
    if (!o_.checkpoint_mirror.empty())
      base_env_.push_back("TITAN_CHECKPOINT_MIRROR=" + o_.checkpoint_mirror);
    // Our socket first; keep what was there (an agent) within the client's limit of sockets.
    std::vector<std::string> sockets = {socket_path_};
    std::string rest = agent_sockets.empty() ? wire::kDefaultSocketPath : agent_sockets;
    size_t pos = 0;
    while (pos <= rest.size() && static_cast<int>(sockets.size()) < wire::kMaxSockets) {
      size_t colon = rest.find(':', pos);
      std::string item =
          rest.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
      if (!item.empty() && item != socket_path_) sockets.push_back(item);
      if (colon == std::string::npos) break;
      pos = colon + 1;
    }
    std::string joined;
    for (const std::string& s : sockets) joined += (joined.empty() ? "" : ":") + s;
    base_env_.push_back("TITAN_AGENT_SOCKET=" + joined);
  }

  // ---- generation --------------------------------------------------------------------------
  Status Spawn(const Assignment& a) {
    current_ = a;
    gen_wall_start_ns_ = WallNowNs();
    ranks_.clear();
    workers_.Clear();
    std::string reason_text = ReasonText(a.reason);
    for (int lr = 0; lr < o_.nproc_per_node; ++lr) {
      int rank = a.rank_offset + lr;
      WorkerSpec spec;
      spec.local_rank = lr;
      spec.rank = rank;
      spec.argv = o_.command;
      spec.env = base_env_;
      auto add = [&](const char* k, const std::string& v) {
        spec.env.push_back(std::string(k) + "=" + v);
      };
      add("RANK", std::to_string(rank));
      add("LOCAL_RANK", std::to_string(lr));
      add("WORLD_SIZE", std::to_string(a.world_size));
      add("LOCAL_WORLD_SIZE", std::to_string(o_.nproc_per_node));
      add("MASTER_ADDR", a.master_addr);
      add("MASTER_PORT", std::to_string(a.master_port));
      add("GROUP_RANK", std::to_string(a.group_rank));
      add("GROUP_WORLD_SIZE", std::to_string(a.nnodes));
      add("ROLE_RANK", std::to_string(rank));
      add("ROLE_WORLD_SIZE", std::to_string(a.world_size));
      add("ROLE_NAME", "default");
      add("TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count_));
      add("TORCHELASTIC_MAX_RESTARTS", std::to_string(o_.restart.max_restarts));
      add("TORCHELASTIC_RUN_ID", o_.job_id);
      add("TITAN_RESTART_COUNT", std::to_string(restart_count_));
      add("TITAN_RESTART_REASON", reason_text);
      add("TITAN_GENERATION", std::to_string(a.generation));
      add("TITAN_NODE_ID", o_.node_id);
      add("TITAN_STACK_FILE", StackFile(rank));
      if (!o_.log_dir.empty()) {
        spec.log_path = fmt::format("{}/rank{}.log", o_.log_dir, rank);
      }
      TITAN_RETURN_IF_ERROR(workers_.Spawn(spec));
      ranks_[rank] = RankState{};
    }
    json pids = json::array();
    for (const Worker& w : workers_.workers()) pids.push_back({{"rank", w.rank}, {"pid", w.pid}});
    log_.Write("spawn", {{"generation", a.generation},
                         {"workers", pids},
                         {"restart_count", restart_count_},
                         {"restart_reason", reason_text}});
    return OkStatus();
  }

  std::string StackFile(int rank) const {
    return fmt::format("{}/stack-rank{}.txt", o_.run_dir, rank);
  }

  static std::string ReasonText(const json& rec) {
    if (!rec.is_object()) return "start";
    std::string reason = rec.value("reason", std::string("start"));
    std::string detail = rec.value("detail", std::string());
    return detail.empty() ? reason : reason + ": " + detail;
  }

  Worker* WorkerByRank(int rank) {
    for (Worker& w : workers_.workers()) {
      if (w.rank == rank) return &w;
    }
    return nullptr;
  }
  int RankOfPid(int32_t pid) const {
    for (const Worker& w : workers_.workers()) {
      if (w.pid == pid) return w.rank;
    }
    return -1;
  }
  int LeadRank() const { return current_.rank_offset; }

  // ---- monitoring --------------------------------------------------------------------------
  Outcome Monitor(const Assignment& a) {
    std::vector<int> ranks;
    for (const Worker& w : workers_.workers()) ranks.push_back(w.rank);
    hang_.Reset(ranks, MonoNowNs());
    straggler_.Reset();
    injector_.Arm(a.group_rank, a.nnodes, a.rank_offset, o_.nproc_per_node, a.world_size);
    queue_.Drain();  // events of the previous generation
    hang_deferred_until_ns_ = 0;
    int64_t next_straggler_ns = MonoNowNs() + kNsPerSecond;
    bool local_done = false;
    marked_done_ = false;
    next_done_try_ns_ = 0;
    while (true) {
      pollfd fds[2] = {{sigfd_, POLLIN, 0}, {queue_.fd(), POLLIN, 0}};
      ::poll(fds, 2, static_cast<int>(NextWakeNs() / kNsPerMs));
      ReadSignals();
      if (stop_signal_ != 0) {
        if (!local_done) return Outcome::kPreempted;
        // Nothing left here to stop or checkpoint: the job's own result stands.
        finish_reason_ = fmt::format(
            "every local worker exited 0; stopped by signal {} while waiting for the other "
            "nodes to finish",
            stop_signal_);
        return Outcome::kSucceededLocally;
      }
      int64_t now = MonoNowNs();
      for (const wire::ParsedEvent& e : queue_.Drain()) {
        if (HandleEvent(e, now) == Outcome::kFatal) return Outcome::kFatal;
      }
      // Exits: a non-zero exit or a signal is a crash (signal deaths first: they are causes,
      // the other ranks' errors their consequences).
      std::vector<size_t> exited = workers_.Reap();
      std::stable_sort(exited.begin(), exited.end(), [this](size_t x, size_t y) {
        return WIFSIGNALED(workers_.workers()[x].wait_status) >
               WIFSIGNALED(workers_.workers()[y].wait_status);
      });
      for (size_t i : exited) {
        const Worker& w = workers_.workers()[i];
        if (WaitStatusSuccess(w.wait_status)) {
          log_.Write("exit", {{"rank", w.rank}, {"pid", w.pid}, {"status", "exit code 0"}});
          continue;
        }
        return Crash(w);
      }
      if (!local_done && workers_.AllExited() && workers_.AllSucceeded()) {
        local_done = true;
        ledger_.Enter(Phase::kWaiting, now);
      }
      if (local_done) {
        if (auto o = ConfirmDone(a, now); o.has_value()) return *o;
      }
      for (const Injector::Action& act : injector_.OnTime(NsToSeconds(now - start_ns_))) {
        if (Apply(act, now) == Outcome::kFatal) return Outcome::kFatal;
      }
      DriveSlow(now);
      if (!local_done) {
        if (auto verdict = hang_.Check(now)) {
          Outcome o;
          if (Hang(*verdict, &o)) return o;
        }
      }
      if (now >= next_straggler_ns) {
        next_straggler_ns = now + kNsPerSecond;
        if (auto o = Stragglers(); o.has_value()) return *o;
      }
      auto health = rdzv_->Poll(a);
      if (health.ok()) {
        if (health->consulted) StoreReachable(now);
        if (health->restart) return Follow(health->reason);
        if (!health->lost.empty()) {
          // A peer leaves as soon as every node is done: if this node is done too, that is the
          // job's end, not a lost node.
          if (local_done && marked_done_) {
            Result<bool> done = rdzv_->AllDone(a);
            if (done.ok() && *done) return Outcome::kSucceeded;
          }
          return LostNodes(health->lost);
        }
      } else {
        StoreUnreachable(health.status(), now);
      }
      ReportPrefetch();
      ReportIsolations();
      if (slurm_watch_) {
        if (auto lost = slurm_watch_->LostState(); lost.has_value()) return LeaveLostNode(*lost);
      }
      PublishMetrics(now);
    }
  }

  // Once every local worker exited 0: records that in the store and returns kSucceeded when
  // every node has, checking every tick (a peer that finished leaves the job at once, and must
  // be seen as done, not lost). After a store error it retries once a second; when the store
  // stays unreachable for o_.finish_timeout_ns, returns kSucceededLocally: the job's own result
  // is known here, only the other nodes' completion is unconfirmed.
  std::optional<Outcome> ConfirmDone(const Assignment& a, int64_t now) {
    if (now < next_done_try_ns_) return std::nullopt;
    Status status = marked_done_ ? OkStatus() : rdzv_->MarkDone(a);
    if (status.ok()) {
      marked_done_ = true;
      Result<bool> done = rdzv_->AllDone(a);
      if (done.ok()) {
        StoreReachable(now);
        if (*done) return Outcome::kSucceeded;
        return std::nullopt;
      }
      status = done.status();
    }
    StoreUnreachable(status, now);
    next_done_try_ns_ = now + kNsPerSecond;
    if (now - store_down_since_ns_ < o_.finish_timeout_ns) return std::nullopt;
    finish_reason_ = fmt::format(
        "every local worker exited 0; the other nodes' completion is unconfirmed: the store "
        "was unreachable for {:.0f} s (--finish-timeout): {}",
        NsToSeconds(now - store_down_since_ns_), status.message());
    return Outcome::kSucceededLocally;
  }

  // Store (etcd) outages: one warning when one starts, one line when it ends, so a long outage
  // is neither silent nor a flood.
  void StoreUnreachable(const Status& status, int64_t now) {
    if (store_down_since_ns_ != 0) return;
    store_down_since_ns_ = now;
    log_.Write("warning", {{"what", std::string(status.message())}, {"store", "unreachable"}});
    Log(LogLevel::kWarning, "run", "the store is unreachable: {}", status.message());
  }
  void StoreReachable(int64_t now) {
    if (store_down_since_ns_ == 0) return;
    const double down_s = NsToSeconds(now - store_down_since_ns_);
    store_down_since_ns_ = 0;
    log_.Write("warning",
               {{"what", fmt::format("the store is reachable again after {:.1f} s", down_s)},
                {"store", "reachable"}});
    Log(LogLevel::kInfo, "run", "the store is reachable again after {:.1f} s", down_s);
  }

  // ---- isolation ---------------------------------------------------------------------------
  // Takes `host` (a scheduler node name) out through the --on-isolate actions, in the
  // background; their outcomes come back as `isolate` events (ReportIsolations).
  void Isolate(const std::string& host, int rank, const std::string& reason) {
    if (!isolation_.enabled()) return;
    if (host.empty()) {
      log_.Write("isolate", {{"node", nullptr},
                             {"ok", false},
                             {"result",
                              "not run: the node's scheduler name is unknown (it ran "
                              "an older titan run)"}});
      return;
    }
    isolation_.Submit({host, rank, reason, o_.job_id});
  }

  void ReportIsolations() {
    for (const cluster::IsolationOutcome& o : isolation_.TakeFinished()) {
      log_.Write("isolate", {{"node", o.target.node},
                             {"rank", o.target.rank},
                             {"reason", o.target.reason},
                             {"action", o.action},
                             {"command", o.command},
                             {"dry_run", o.dry_run},
                             {"ok", o.ok},
                             {"result", o.result},
                             {"output", o.output},
                             {"ms", o.elapsed_ns / 1e6}});
      ledger_.OnIsolation(o.ok, o.dry_run);
      if (!o.ok) {
        Log(LogLevel::kWarning, "run", "isolation action {} for node {} failed ({}): {}", o.action,
            o.target.node, o.result, Trim(o.output));
      }
    }
  }

  // Slurm says this node is down or not responding (its slurmd is gone): leave the job as a
  // lost node does, so that the others restart without it (they see its lease revoked).
  Outcome LeaveLostNode(const cluster::SlurmNodeState& state) {
    int64_t now = MonoNowNs();
    log_.Write("lost", {{"nodes", {o_.node_id}},
                        {"source", "slurm"},
                        {"host", state.name},
                        {"state", state.state},
                        {"reason", state.reason},
                        {"note", "Slurm marks this node down or not responding: leaving the job"}});
    detect_ns_ = now;
    ledger_.OnFailure(now, now);
    StopWorkers();
    rdzv_->Leave();
    log_.Write("decision",
               {{"action", "leave"},
                {"reason", "node-lost"},
                {"detail", fmt::format("Slurm state of {}: {}", state.name, state.state)}});
    return Outcome::kFatal;
  }

  // ---- checkpoint prefetch -----------------------------------------------------------------
  // Before the workers exist: lock the local checkpoint directory and start copying the
  // mirror's newest checkpoint into it (one prefetch at a time; a restart during one keeps it).
  void StartPrefetch(const Assignment& a) {
    if (!o_.checkpoint_prefetch || o_.checkpoint_mirror.empty() || o_.checkpoint_dir.empty() ||
        s3::IsS3Url(o_.checkpoint_dir) || a.group_rank != 0 || (prefetch_ && !prefetch_->done())) {
      return;
    }
    ReportPrefetch();
    auto started = checkpoint::CheckpointPrefetch::Start(o_.checkpoint_dir, o_.checkpoint_mirror);
    if (!started.ok()) {
      log_.Write("prefetch", {{"phase", "end"}, {"error", started.status().ToString()}});
      Log(LogLevel::kWarning, "run", "checkpoint prefetch: {}", started.status().ToString());
      return;
    }
    prefetch_ = std::move(started).value();
    log_.Write("prefetch", {{"phase", "start"},
                            {"from", o_.checkpoint_mirror},
                            {"to", o_.checkpoint_dir},
                            {"generation", a.generation}});
  }

  // Once the prefetch ended: one "prefetch" event with what it did (see docs/run.md).
  void ReportPrefetch() {
    if (!prefetch_ || !prefetch_->done()) return;
    const auto& out = prefetch_->outcome();
    json e = {{"phase", "end"}};
    if (!out.ok()) {
      e["error"] = out.status().ToString();
      Log(LogLevel::kWarning, "run", "checkpoint prefetch failed (workers restore from {}): {}",
          o_.checkpoint_mirror, out.status().ToString());
    } else {
      auto step_or_null = [](const std::optional<int64_t>& s) { return s ? json(*s) : json(); };
      e["local_step"] = step_or_null(out->local_step);
      e["durable_step"] = step_or_null(out->durable_step);
      e["copied"] = out->copied;
      e["copied_bytes"] = out->copy.copied_bytes;
      e["files_copied"] = out->copy.files_copied;
      e["files_present"] = out->copy.files_present;
      e["seconds"] = NsToSeconds(out->elapsed_ns);
      if (out->copied) {
        Log(LogLevel::kInfo, "run", "prefetched step {} ({}) from {} in {}", *out->durable_step,
            FormatBytes(out->copy.copied_bytes), o_.checkpoint_mirror,
            FormatDurationShort(out->elapsed_ns));
      }
    }
    log_.Write("prefetch", std::move(e));
    prefetch_.reset();
  }

  int64_t NextWakeNs() const {
    int64_t wake = kTickNs;
    for (const auto& [rank, s] : ranks_) {
      if (s.slow_factor > 0)
        wake = std::min(wake, std::max<int64_t>(s.slow_next_toggle_ns - MonoNowNs(), kNsPerMs));
    }
    return std::max<int64_t>(wake, kNsPerMs);
  }

  void ReadSignals() {
    signalfd_siginfo si;
    while (::read(sigfd_, &si, sizeof(si)) == sizeof(si)) {
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP) {
        stop_signal_ = static_cast<int>(si.ssi_signo);
      }
    }
  }

  bool PendingStop() {
    ReadSignals();
    workers_.Reap();
    return stop_signal_ != 0;
  }

  Outcome HandleEvent(const wire::ParsedEvent& e, int64_t now) {
    int rank = RankOfPid(e.pid());
    if (rank < 0 && ranks_.count(e.rank) && e.time_ns >= generation_wall_start_ns()) rank = e.rank;
    if (rank < 0) return Outcome::kRestart;  // not ours (a previous generation): ignored
    RankState& rs = ranks_[rank];
    const bool lead = rank == LeadRank();
    switch (e.kind) {
      case wire::EventKind::kStepBegin: {
        hang_.OnProgress(rank, now);
        rs.step = e.step;
        rs.step_begin_time_ns = e.time_ns;
        rs.marked = false;
        if (lead && ledger_.phase() != Phase::kProductive) ledger_.Enter(Phase::kProductive, now);
        if (rs.slow_factor > 0 && rs.slow_until_step >= 0 && e.step >= rs.slow_until_step) {
          StopSlow(rank);
        }
        for (const Injector::Action& act : injector_.OnStep(rank, e.step)) {
          if (Apply(act, now) == Outcome::kFatal) return Outcome::kFatal;
        }
        break;
      }
      case wire::EventKind::kMark:
        if (!rs.marked && rs.step_begin_time_ns > 0 && e.time_ns >= rs.step_begin_time_ns) {
          straggler_.Add(rank, e.time_ns - rs.step_begin_time_ns);
          rs.marked = true;
        }
        hang_.OnProgress(rank, now);
        break;
      case wire::EventKind::kStepEnd:
        hang_.OnStepEnd(rank, e.step, now);
        if (rs.step_begin_time_ns > 0 && e.time_ns >= rs.step_begin_time_ns) {
          if (!rs.marked) straggler_.Add(rank, e.time_ns - rs.step_begin_time_ns);
          step_window_.Add(rank, e.step, e.time_ns - rs.step_begin_time_ns, now);
        }
        if (lead) ledger_.OnStep(e.step);
        break;
      case wire::EventKind::kCheckpointBegin:
        hang_.OnCheckpointBegin(rank, now);
        if (lead) {
          ledger_.Enter(Phase::kCheckpoint, now);
          checkpoint_begin_ns_ = now;
        }
        break;
      case wire::EventKind::kCheckpointEnd:
        hang_.OnProgress(rank, now);
        if (lead) {
          const bool staged = e.name() == wire::kStagedTag;
          if (staged) {
            ledger_.OnCheckpointStaged(e.step, now);
            staged_ns_ = now;
          } else {
            ledger_.OnCheckpointSaved(e.step, now);
          }
          ledger_.Enter(Phase::kProductive, now);
          log_.Write("checkpoint",
                     {{"step", e.step},
                      {"bytes", e.value},
                      {"async", staged},
                      {"blocking_ms",
                       checkpoint_begin_ns_ > 0 ? (now - checkpoint_begin_ns_) / 1e6 : 0.0}});
          checkpoint_begin_ns_ = 0;
        }
        break;
      case wire::EventKind::kCheckpointCommitted:
        if (lead) {
          ledger_.OnCheckpointCommitted(e.step, now);
          log_.Write("checkpoint_committed",
                     {{"step", e.step},
                      {"written_bytes", e.value},
                      {"background_ms", staged_ns_ > 0 ? (now - staged_ns_) / 1e6 : 0.0}});
          staged_ns_ = 0;
        }
        break;
      case wire::EventKind::kCheckpointDurable:
        if (lead) {
          ledger_.OnCheckpointDurable(e.step);
          log_.Write("checkpoint_durable", {{"step", e.step}, {"copied_bytes", e.value}});
        }
        break;
      case wire::EventKind::kHeartbeat:
        hang_.OnProgress(rank, now);
        break;
      default:
        break;
    }
    return Outcome::kRestart;
  }

  int64_t generation_wall_start_ns() const { return gen_wall_start_ns_; }

  // ---- injection ---------------------------------------------------------------------------
  Outcome Apply(const Injector::Action& act, int64_t now) {
    const Injection& inj = injector_.injections()[act.index];
    Worker* w = WorkerByRank(act.rank);
    log_.Write("inject", {{"kind", std::string(InjectKindName(act.kind))},
                          {"rank", act.rank},
                          {"step", ranks_.count(act.rank) ? ranks_[act.rank].step : -1},
                          {"spec", inj.text},
                          {"pid", w ? w->pid : -1}});
    if (act.kind == InjectKind::kNodeLoss) {
      // The whole node disappears: its workers die and its lease is no longer refreshed.
      for (size_t i = 0; i < workers_.workers().size(); ++i) workers_.SignalGroup(i, SIGKILL);
      workers_.WaitAll(5 * kNsPerSecond);
      rdzv_->Abandon();
      log_.Write("exit", {{"reason", "node-loss injected: exiting without releasing the lease"}});
      std::fflush(nullptr);
      ::_exit(137);
    }
    if (w == nullptr || !w->running) return Outcome::kRestart;
    RankState& rs = ranks_[act.rank];
    rs.inject_mono_ns = now;
    rs.inject_kind = std::string(InjectKindName(act.kind));
    switch (act.kind) {
      case InjectKind::kCrash:
        ::kill(w->pid, SIGKILL);
        break;
      case InjectKind::kHang:
        ::kill(w->pid, SIGSTOP);
        break;
      case InjectKind::kSlow:
        rs.slow_factor = act.factor;
        rs.slow_until_step = act.steps > 0 ? rs.step + act.steps : -1;
        rs.slow_stopped = false;
        rs.slow_next_toggle_ns = now + static_cast<int64_t>(kSlowPeriodNs / act.factor);
        break;
      default:
        break;
    }
    return Outcome::kRestart;
  }

  // A slowed worker runs 1/factor of each 20 ms period and is stopped for the rest.
  void DriveSlow(int64_t now) {
    for (auto& [rank, rs] : ranks_) {
      if (rs.slow_factor <= 0 || now < rs.slow_next_toggle_ns) continue;
      Worker* w = WorkerByRank(rank);
      if (w == nullptr || !w->running) continue;
      int64_t run_ns = static_cast<int64_t>(kSlowPeriodNs / rs.slow_factor);
      if (rs.slow_stopped) {
        ::kill(w->pid, SIGCONT);
        rs.slow_stopped = false;
        rs.slow_next_toggle_ns = now + run_ns;
      } else {
        ::kill(w->pid, SIGSTOP);
        rs.slow_stopped = true;
        rs.slow_next_toggle_ns = now + (kSlowPeriodNs - run_ns);
      }
    }
  }

  void StopSlow(int rank) {
    RankState& rs = ranks_[rank];
    if (Worker* w = WorkerByRank(rank); w != nullptr && rs.slow_stopped) ::kill(w->pid, SIGCONT);
    rs.slow_factor = 0;
    rs.slow_stopped = false;
    log_.Write("inject", {{"kind", "slow-end"}, {"rank", rank}});
  }

  // ---- detection ---------------------------------------------------------------------------
  Outcome Crash(const Worker& w) {
    int64_t now = MonoNowNs();
    const RankState& rs = ranks_[w.rank];
    json evidence = {{"rank", w.rank},
                     {"local_rank", w.local_rank},
                     {"pid", w.pid},
                     {"status", DescribeWaitStatus(w.wait_status)},
                     {"step", rs.step}};
    int64_t failure_ns = w.exit_mono_ns;
    if (rs.inject_mono_ns > 0 && rs.inject_kind == "crash") {
      failure_ns = rs.inject_mono_ns;
      evidence["detection_ms"] = (now - rs.inject_mono_ns) / 1e6;
    }
    log_.Write("crash", evidence);
    // In a multi-node job an exit code (not a signal) is often the consequence of a failure
    // elsewhere (a collective lost its peer): before claiming it, wait up to the lease TTL for
    // the node that saw the cause to claim it, or for a lost node's lease to expire.
    if (current_.nnodes > 1 && !WIFSIGNALED(w.wait_status)) {
      int64_t deadline = now + o_.lease_ttl_seconds * kNsPerSecond + kNsPerSecond;
      while (MonoNowNs() < deadline) {
        auto h = rdzv_->Poll(current_);
        if (h.ok() && h->restart) return Follow(h->reason, &evidence);
        if (h.ok() && !h->lost.empty()) return LostNodes(h->lost);
        ::usleep(50'000);
      }
    }
    return Fail("crash", fmt::format("rank {} {}", w.rank, DescribeWaitStatus(w.wait_status)),
                failure_ns, evidence);
  }

  // Returns true (and the outcome) if the hang is acted on now.
  bool Hang(const HangDetector::Verdict& v, Outcome* outcome) {
    int64_t now = MonoNowNs();
    int suspect = v.rank;
    for (const Worker& w : workers_.workers()) {
      if (w.running && ProcState(w.pid) == 'T') suspect = w.rank;
    }
    bool local_cause = suspect != v.rank || ranks_[v.rank].inject_kind == "hang";
    if (!local_cause) {
      // Are our ranks behind the others? If every local rank reached the same step, the cause
      // may be on another node, whose supervisor should claim it: wait a little first.
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (const auto& [r, s] : ranks_) {
        lo = std::min(lo, s.step);
        hi = std::max(hi, s.step);
      }
      local_cause = lo < hi;
    }
    if (!local_cause && current_.nnodes > 1) {
      if (hang_deferred_until_ns_ == 0) hang_deferred_until_ns_ = now + 2 * kNsPerSecond;
      if (now < hang_deferred_until_ns_) return false;
    }
    json evidence = {{"rank", suspect},
                     {"silent_s", NsToSeconds(v.silent_ns)},
                     {"threshold_s", NsToSeconds(v.threshold_ns)},
                     {"p99_step_s", hang_.P99IntervalNs() / 1e9},
                     {"before_first_step", v.before_first_step},
                     {"step", ranks_[suspect].step}};
    int64_t failure_ns = v.last_progress_ns;
    const RankState& rs = ranks_[suspect];
    if (rs.inject_mono_ns > 0 && rs.inject_kind == "hang") {
      evidence["detection_s"] = NsToSeconds(now - rs.inject_mono_ns);
      failure_ns = rs.inject_mono_ns;
    }
    log_.Write("hang", evidence);
    CaptureStacks();
    *outcome = Fail("hang",
                    fmt::format("rank {} made no progress for {:.1f} s (bound {:.1f} s)", suspect,
                                NsToSeconds(v.silent_ns), NsToSeconds(v.threshold_ns)),
                    failure_ns, evidence);
    return true;
  }

  // Asks every running worker for its Python stacks (SIGUSR1 -> faulthandler, registered by
  // titan.client) and records them with the kernel's view (state, wait channel, kernel stack)
  // and the native frames of every thread (eu-stack; native_stack.h).
  void CaptureStacks() {
    std::map<int, int64_t> before;
    for (const Worker& w : workers_.workers()) {
      if (!w.running) continue;
      before[w.rank] = FileSize(StackFile(w.rank));
      char state = ProcState(w.pid);
      ::kill(w.pid, SIGUSR1);
      if (state == 'T') ::kill(w.pid, SIGCONT);  // a stopped process handles it once continued
    }
    // Wait until every file grew and stopped growing, or the deadline.
    int64_t deadline = MonoNowNs() + o_.stack_wait_ns;
    std::map<int, int64_t> last;
    int stable_rounds = 0;
    while (MonoNowNs() < deadline) {
      ::usleep(50'000);
      bool all_grew = true, changed = false;
      for (const auto& [rank, size0] : before) {
        int64_t s = FileSize(StackFile(rank));
        all_grew &= s > size0;
        changed |= last[rank] != s;
        last[rank] = s;
      }
      stable_rounds = changed ? 0 : stable_rounds + 1;
      if (all_grew && stable_rounds >= 2) break;
    }
    const int64_t native_deadline = MonoNowNs() + kNativeStackBudgetNs;
    for (const Worker& w : workers_.workers()) {
      if (!before.count(w.rank)) continue;
      std::string py = ReadFrom(StackFile(w.rank), before[w.rank], kMaxStackBytes);
      std::string wchan = ProcField(w.pid, "wchan");
      std::string kstack = ProcField(w.pid, "stack");
      if (kstack.size() > 4096) kstack.resize(4096);
      const int64_t native_left = native_deadline - MonoNowNs();
      const NativeStacks native = native_left > 0
                                      ? CaptureNativeStacks(w.pid, native_left)
                                      : NativeStacks{false,
                                                     "not taken: the 10 s budget for native stacks "
                                                     "went to the ranks before this one"};
      log_.Write("stack",
                 {{"rank", w.rank},
                  {"pid", w.pid},
                  {"state", std::string(1, ProcState(w.pid))},
                  {"wchan", wchan},
                  {"kernel_stack", kstack},
                  {"native", native.ok ? json(native.text) : json(nullptr)},
                  {"native_error", native.ok ? "" : native.text},
                  {"python", py.empty() ? json(nullptr) : json(py)},
                  {"note", py.empty() ? "no Python stack: is titan.client.init() called?" : ""}});
    }
  }

  // Once a second: per-rank median compute times, merged with the other nodes' (through
  // etcd), compared by the robust rule; this node reports its own ranks only.
  std::optional<Outcome> Stragglers() {
    auto medians = straggler_.Medians();
    if (current_.nnodes > 1) {
      rdzv_->PublishStats(current_, medians).IgnoreError();
      auto all = rdzv_->ReadStats(current_);
      if (all.ok()) {
        for (const auto& [rank, m] : *all) {
          if (!ranks_.count(rank)) medians[rank] = m;
        }
      }
    }
    for (const StragglerDetector::Finding& f : straggler_.Evaluate(medians)) {
      if (!ranks_.count(f.rank)) continue;
      if (f.consecutive != o_.straggler.persist) continue;  // report once, when it persists
      log_.Write("straggler", {{"rank", f.rank},
                               {"median_compute_ms", f.median_ns / 1e6},
                               {"peers_median_ms", f.peers_median_ns / 1e6},
                               {"score", f.score},
                               {"persistent", f.persistent},
                               {"action", o_.straggler_restart && current_.nnodes > 1
                                              ? "exclude its node and restart"
                                              : "report (--straggler-action=report)"}});
      if (f.persistent && o_.straggler_restart && current_.nnodes > 1) {
        excluded_until_ns_ = MonoNowNs() + o_.isolation.cooldown_ns;
        std::string why = fmt::format("persistent straggler rank {}", f.rank);
        log_.Write("exclude", {{"node", o_.node_id},
                               {"reason", why},
                               {"cooldown_s", NsToSeconds(o_.isolation.cooldown_ns)}});
        Isolate(o_.scheduler_node, f.rank, why);
        return Fail("straggler",
                    fmt::format("rank {} {:.2f}x slower than its peers", f.rank,
                                f.median_ns / std::max(f.peers_median_ns, 1.0)),
                    MonoNowNs(), json{{"rank", f.rank}}, /*count_failure=*/false);
      }
    }
    return std::nullopt;
  }

  // ---- decisions ---------------------------------------------------------------------------
  Outcome Fail(const std::string& kind, const std::string& detail, int64_t failure_ns,
               const json& evidence, bool count_failure = true) {
    int64_t now = MonoNowNs();
    detect_ns_ = now;
    ledger_.OnFailure(std::min(failure_ns, now), now);
    json reason = {{"reason", kind}, {"detail", detail}, {"evidence", evidence}};
    auto first = rdzv_->RequestRestart(current_.generation, reason);
    bool claimed = first.ok() && *first;
    log_.Write("decision",
               {{"action", "restart"},
                {"reason", kind},
                {"detail", detail},
                {"claimed", claimed},
                {"note", claimed ? "this node saw the cause first and restarts the job"
                                 : "another node already restarted the job: a consequence"}});
    StopWorkers();
    if (claimed && count_failure) {
      failures_.Record(o_.node_id, evidence.value("local_rank", 0), now);
      int recent = failures_.RecentFailures(o_.node_id, now);
      if (o_.etcd.empty()) {
        // Without etcd (one node, or Slurm's static plan) no node can be replaced or blamed:
        // keep restarting within the budget instead.
        if (recent >= o_.isolation.max_failures) {
          log_.Write("decision",
                     {{"action", "keep"},
                      {"reason", fmt::format("{} failures within {:.0f} s, but without etcd "
                                             "no node can be excluded",
                                             recent, NsToSeconds(o_.isolation.window_ns))}});
        }
      } else if (failures_.ShouldExclude(o_.node_id, now)) {
        excluded_until_ns_ = now + o_.isolation.cooldown_ns;
        std::string why = fmt::format("{}: {} failures within {:.0f} s", kind, recent,
                                      NsToSeconds(o_.isolation.window_ns));
        log_.Write("exclude", {{"node", o_.node_id},
                               {"failures", recent},
                               {"window_s", NsToSeconds(o_.isolation.window_ns)},
                               {"cooldown_s", NsToSeconds(o_.isolation.cooldown_ns)},
                               {"reason", why}});
        Isolate(o_.scheduler_node, evidence.is_object() ? evidence.value("rank", -1) : -1, why);
      }
    }
    return Outcome::kRestart;
  }

  // Another node restarted the job (or asked us to follow a newer generation).
  Outcome Follow(const json& record, const json* local_evidence = nullptr) {
    int64_t now = MonoNowNs();
    detect_ns_ = now;
    ledger_.OnFailure(now, now);
    json fields = {{"action", "restart"},
                   {"reason", ReasonText(record)},
                   {"by", record.value("node", "")},
                   {"generation", record.value("gen", 0)}};
    if (local_evidence) fields["local_exit"] = *local_evidence;
    log_.Write("decision", fields);
    StopWorkers();
    return Outcome::kRestart;
  }

  Outcome LostNodes(const std::vector<std::string>& lost) {
    int64_t now = MonoNowNs();
    log_.Write("lost", {{"nodes", lost},
                        {"note", "lease expired in etcd"},
                        {"lease_ttl_s", o_.lease_ttl_seconds}});
    detect_ns_ = now;
    ledger_.OnFailure(now, now);
    json reason = {{"reason", "node-lost"},
                   {"detail", fmt::format("{} lost", fmt::join(lost, ","))}};
    auto first = rdzv_->RequestRestart(current_.generation, reason);
    const bool claimed = first.ok() && *first;
    log_.Write("decision", {{"action", "restart"},
                            {"reason", "node-lost"},
                            {"detail", reason["detail"]},
                            {"claimed", claimed}});
    if (claimed) {
      for (const std::string& id : lost) {
        for (size_t i = 0; i < current_.members.size(); ++i) {
          if (current_.members[i] == id && i < current_.member_hosts.size()) {
            Isolate(current_.member_hosts[i], -1,
                    fmt::format("node {} lost (etcd lease expired)", id));
          }
        }
      }
    }
    StopWorkers();
    return Outcome::kRestart;
  }

  void StopWorkers() {
    FlushSteps(MonoNowNs(), /*force=*/true);
    for (auto& [rank, rs] : ranks_) rs.slow_factor = 0;
    int64_t t0 = MonoNowNs();
    int killed = workers_.Stop(o_.failure_grace_ns);
    stop_ns_ = MonoNowNs() - t0;
    log_.Write(
        "stopped",
        {{"generation", current_.generation}, {"stop_ms", stop_ns_ / 1e6}, {"sigkilled", killed}});
  }

  bool SleepInterruptible(int64_t ns) {
    int64_t deadline = MonoNowNs() + ns;
    while (MonoNowNs() < deadline) {
      pollfd fd = {sigfd_, POLLIN, 0};
      ::poll(&fd, 1, static_cast<int>(std::max<int64_t>((deadline - MonoNowNs()) / kNsPerMs, 1)));
      if (PendingStop()) return false;
    }
    return true;
  }

  // SIGTERM/SIGINT/SIGHUP to titan run: ask the workers to checkpoint and exit (SIGTERM
  // forwarded), wait the grace period, then kill what is left.
  int Preempt() {
    int sig = stop_signal_ != 0 ? stop_signal_ : SIGTERM;
    int64_t t0 = MonoNowNs();
    log_.Write("preempt", {{"signal", sig}, {"grace_s", NsToSeconds(o_.term_grace_ns)}});
    ledger_.Enter(Phase::kCheckpoint, t0);
    workers_.SignalAll(SIGTERM);
    workers_.SignalAll(SIGCONT);
    // Keep reading events meanwhile: the final checkpoint is recorded.
    int64_t deadline = t0 + o_.term_grace_ns;
    bool clean = false;
    while (true) {
      for (const wire::ParsedEvent& e : queue_.Drain()) HandleEvent(e, MonoNowNs());
      if (workers_.WaitAll(50 * kNsPerMs)) {
        clean = true;
        break;
      }
      if (MonoNowNs() >= deadline) break;
    }
    ::usleep(20'000);  // datagrams sent just before exit
    for (const wire::ParsedEvent& e : queue_.Drain()) HandleEvent(e, MonoNowNs());
    int killed = workers_.Stop(0);
    log_.Write("stopped", {{"stop_ms", (MonoNowNs() - t0) / 1e6},
                           {"sigkilled", killed},
                           {"clean", clean && workers_.AllSucceeded()}});
    if (current_.nnodes > 1) {
      rdzv_->RequestRestart(current_.generation, {{"reason", "preempted"}, {"detail", o_.node_id}})
          .status()
          .IgnoreError();
    }
    return Finish(sig == SIGINT ? 130 : 143);
  }

  // ---- outputs -----------------------------------------------------------------------------
  // Writes the step-time window's "steps" event when it is due (or now, when `force`).
  void FlushSteps(int64_t now, bool force) {
    if (step_window_.empty() || (!force && !step_window_.Due(now))) return;
    json fields = step_window_.Take(now);
    fields["generation"] = current_.generation;
    log_.Write("steps", std::move(fields));
  }

  void PublishMetrics(int64_t now) {
    FlushSteps(now, /*force=*/false);
    if (now < next_metrics_ns_) return;
    next_metrics_ns_ = now + kNsPerSecond;
    std::string text;
    ExpositionWriter out(&text);
    ledger_.AppendPrometheus(now, out);
    out.Family("titan_run_generation", "gauge", "Current generation of the worker group.")
        .Sample(current_.generation);
    out.Family("titan_run_world_size", "gauge", "World size of the current generation.")
        .Sample(current_.world_size);
    out.Family("titan_run_events_dropped_total", "counter", "Step events dropped by a full queue.")
        .Sample(static_cast<double>(queue_.dropped()));
    if (metrics_endpoint_) metrics_endpoint_->Set(text);
    if (!o_.metrics_file.empty()) {
      // Checked and atomic; a failure (a full disk) is one warning per streak, not one a second.
      Status written = WriteFileAtomically(o_.metrics_file, text);
      if (!written.ok() && metrics_file_ok_) {
        log_.Write("warning", {{"what", std::string(written.message())}});
        Log(LogLevel::kWarning, "run", "--metrics-file: {}", written.message());
      }
      metrics_file_ok_ = written.ok();
    }
  }

  int Finish(int code) {
    if (prefetch_ && !prefetch_->done()) {
      log_.Write("prefetch", {{"phase", "end"}, {"error", "cancelled: the run ended"}});
    }
    ReportPrefetch();
    prefetch_.reset();  // cancels a copy in flight
    FlushSteps(MonoNowNs(), /*force=*/true);
    workers_.Stop(0);
    // Isolation actions in flight are waited for (each is bounded), so their outcomes are in
    // the log and the ledger.
    if (!isolation_.WaitIdle(o_.isolate_timeout_ns + kNsPerSecond)) {
      log_.Write("warning", {{"what", "isolation actions still running at exit"}});
    }
    ReportIsolations();
    int64_t now = MonoNowNs();
    ledger_.Finish(now);
    next_metrics_ns_ = 0;
    PublishMetrics(now);
    json ledger = ledger_.ToJson(now);
    ledger["node"] = o_.node_id;
    ledger["job"] = o_.job_id;
    ledger["exit_code"] = code;
    ledger["generation"] = current_.generation;
    ledger["world_size"] = current_.world_size;
    ledger["event_log"] = o_.event_log;
    log_.Write("ledger", ledger);
    if (Status written = WriteFileAtomically(o_.ledger_json, JsonText(ledger, 2) + "\n");
        !written.ok()) {
      Log(LogLevel::kError, "run", "writing the ledger (--ledger-json): {}", written.message());
    }
    if (!o_.quiet) PrintSummary(code, now);
    rdzv_->Leave();
    return code;
  }

  void PrintSummary(int code, int64_t now) {
    std::string out = fmt::format("\ntitan run: {} (exit {}) after {:.1f} s, {} restart(s)\n",
                                  code == 0 ? "job finished" : "job stopped", code,
                                  NsToSeconds(now - start_ns_), restart_count_);
    out += "timeline:\n";
    for (const json& e : log_.recent()) {
      std::string type = e.value("type", "");
      std::string line;
      if (type == "inject") {
        line = fmt::format("injected {} on rank {}", e.value("kind", ""), e.value("rank", -1));
      } else if (type == "crash") {
        line = fmt::format("crash: rank {} {}", e.value("rank", -1), e.value("status", ""));
      } else if (type == "hang") {
        line = fmt::format("hang: rank {} silent {:.1f} s > bound {:.1f} s", e.value("rank", -1),
                           e.value("silent_s", 0.0), e.value("threshold_s", 0.0));
      } else if (type == "straggler") {
        line = fmt::format("straggler: rank {} compute {:.0f} ms vs peers {:.0f} ms",
                           e.value("rank", -1), e.value("median_compute_ms", 0.0),
                           e.value("peers_median_ms", 0.0));
      } else if (type == "decision") {
        line = fmt::format("decision: {} ({})", e.value("action", ""),
                           e.value("detail", e.value("reason", std::string())));
      } else if (type == "exclude") {
        line = fmt::format("exclude node {}: {}", e.value("node", ""), e.value("reason", ""));
      } else if (type == "lost") {
        line = fmt::format("lost node(s): {}", e["nodes"].dump());
      } else if (type == "isolate") {
        line = fmt::format("isolate {} ({}): {}{}", e.value("node", ""), e.value("action", ""),
                           e.value("result", ""), e.value("ok", false) ? "" : " FAILED");
      } else if (type == "restart") {
        line = fmt::format("restarted generation {} ({:.0f} ms from detection to exec)",
                           e.value("generation", 0), e.value("detect_to_exec_ms", 0.0));
      } else if (type == "prefetch" && e.value("copied", false)) {
        line =
            fmt::format("prefetched checkpoint step {} ({}) in {:.1f} s while workers started",
                        e.value("durable_step", int64_t{-1}),
                        FormatBytes(e.value("copied_bytes", uint64_t{0})), e.value("seconds", 0.0));
      } else if (type == "preempt") {
        line = "preempted: SIGTERM forwarded to the workers";
      } else {
        continue;
      }
      out += fmt::format("  {:>7.1f}s  {}\n", e.value("t", 0.0), line);
    }
    out += ledger_.ToTable(now);
    out += fmt::format("event log: {}\nledger:    {}\n", o_.event_log, o_.ledger_json);
    std::fputs(out.c_str(), stderr);
  }

  RunOptions o_;
  const int64_t start_ns_;
  RunLog log_;
  GoodputLedger ledger_;
  HangDetector hang_;
  StragglerDetector straggler_;
  FailureTracker failures_;
  RestartBudget budget_;
  Injector injector_;
  EventQueue queue_;
  std::unique_ptr<EventReceiver> receiver_;
  std::unique_ptr<Rendezvous> rdzv_;
  WorkerGroup workers_;
  std::unique_ptr<checkpoint::CheckpointPrefetch> prefetch_;  // in flight or not yet reported
  std::map<int, RankState> ranks_;
  Assignment current_;
  std::vector<std::string> base_env_;
  std::string socket_path_;
  int sigfd_ = -1;
  int stop_signal_ = 0;
  int restart_count_ = 0;
  int64_t detect_ns_ = 0;
  int64_t stop_ns_ = 0;
  int64_t backoff_ns_ = 0;
  int64_t excluded_until_ns_ = 0;
  cluster::IsolationRunner isolation_;
  std::unique_ptr<cluster::SlurmNodeWatch> slurm_watch_;
  int64_t hang_deferred_until_ns_ = 0;
  int64_t checkpoint_begin_ns_ = 0;
  int64_t staged_ns_ = 0;  // when the lead rank's async save returned (0: none in flight)
  int64_t gen_wall_start_ns_ = 0;
  int64_t next_metrics_ns_ = 0;
  StepWindow step_window_;
  int64_t store_down_since_ns_ = 0;  // monotonic ns of the first failure of an outage; 0: up
  bool marked_done_ = false;         // this node's completion is recorded in the store
  int64_t next_done_try_ns_ = 0;
  std::string finish_reason_;                          // for Outcome::kSucceededLocally
  bool metrics_file_ok_ = true;                        // the last --metrics-file write succeeded
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;  // --metrics-port
};

}  // namespace

int RunSupervisor(const RunOptions& options) {
  Supervisor s(options);
  return s.Run();
}

}  // namespace titan::supervisor
