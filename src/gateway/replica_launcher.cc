#include "src/gateway/replica_launcher.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "src/base/check.h"
#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/supervisor/worker_group.h"

extern char** environ;

namespace titan::gateway {
namespace {

constexpr int64_t kPollNs = 20 * kNsPerMs;
constexpr char kComponent[] = "gateway";

// The launcher whose thread this is (set by Run()): Kill() and Stop() from its listener.
thread_local const ReplicaLauncher* tls_launcher = nullptr;

// Free TCP ports on `host`: each socket bound to port 0 stays open until all are picked, so the
// ports differ; they are closed before the replicas start (another process may take one in
// between: the replica then fails to bind, exits and is restarted on the same port).
Result<std::vector<int>> PickFreePorts(const std::string& host, int count) {
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), "0", &hints, &found); rc != 0) {
    return InvalidArgumentError(
        fmt::format("resolving launch host '{}': {}", host, ::gai_strerror(rc)));
  }
  std::vector<int> fds, ports;
  Status error;
  for (int i = 0; i < count && error.ok(); ++i) {
    const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = ErrnoError(errno, "socket for picking a replica port");
      break;
    }
    fds.push_back(fd);
    sockaddr_storage addr = {};
    socklen_t len = sizeof(addr);
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
      error = ErrnoError(errno, fmt::format("binding port 0 on {} to pick a replica port", host));
    } else if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      error = ErrnoError(errno, "getsockname for a replica port");
    } else if (addr.ss_family == AF_INET6) {
      ports.push_back(ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port));
    } else {
      ports.push_back(ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port));
    }
  }
  for (int fd : fds) ::close(fd);
  ::freeaddrinfo(found);
  if (!error.ok()) return error;
  return ports;
}

// mkdir -p.
Status MakeDirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    const std::string prefix = path.substr(0, i);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError(errno, "making the replica log directory " + prefix);
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoError(errno, "replica log directory " + path);
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgumentError("replica log directory " + path + " is not a directory");
  }
  return OkStatus();
}

Status AppendLine(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, "opening replica log " + path);
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size())) return ErrnoError(err, "writing replica log " + path);
  return OkStatus();
}

Status Validate(const LaunchOptions& o) {
  if (o.command.find("{port}") == std::string::npos) {
    return InvalidArgumentError(fmt::format(
        "--launch command '{}' has no {{port}}: each replica must be told its port, e.g. "
        "'llama-server -m model.gguf --port {{port}}'",
        o.command));
  }
  if (o.replicas < 1) {
    return InvalidArgumentError(fmt::format("--replicas {}: must be 1 or more", o.replicas));
  }
  if (!o.ports.empty()) {
    if (static_cast<int>(o.ports.size()) != o.replicas) {
      return InvalidArgumentError(
          fmt::format("{} replica ports for {} replicas", o.ports.size(), o.replicas));
    }
    std::set<int> seen;
    for (int p : o.ports) {
      if (p < 1 || p > 65535) return InvalidArgumentError(fmt::format("replica port {}", p));
      if (!seen.insert(p).second) {
        return InvalidArgumentError(fmt::format("replica port {} given twice", p));
      }
    }
  }
  if (o.restart_initial_backoff_ns <= 0 ||
      o.restart_max_backoff_ns < o.restart_initial_backoff_ns) {
    return InvalidArgumentError(
        fmt::format("restart back-off: initial {} ns must be > 0 and at most the maximum {} ns",
                    o.restart_initial_backoff_ns, o.restart_max_backoff_ns));
  }
  if (o.stop_grace_ns < 0 || o.restart_reset_after_ns < 0) {
    return InvalidArgumentError("negative stop grace or restart reset time");
  }
  return OkStatus();
}

}  // namespace

std::string SubstituteCommand(const std::string& command, int port, int index) {
  std::string out;
  out.reserve(command.size() + 8);
  for (size_t i = 0; i < command.size();) {
    if (command.compare(i, 6, "{port}") == 0) {
      out += std::to_string(port);
      i += 6;
    } else if (command.compare(i, 7, "{index}") == 0) {
      out += std::to_string(index);
      i += 7;
    } else {
      out += command[i++];
    }
  }
  return out;
}

std::string DescribeBackoff(int64_t ns) {
  if (ns < kNsPerSecond) return fmt::format("in {}ms", ns / kNsPerMs);
  if (ns % kNsPerSecond == 0) return fmt::format("in {}s", ns / kNsPerSecond);
  return fmt::format("in {:g}s", NsToSeconds(ns));
}

int64_t BackoffForCrash(int consecutive, int64_t initial_ns, int64_t max_ns) {
  int64_t backoff = initial_ns;
  for (int i = 1; i < consecutive && backoff < max_ns; ++i) {
    backoff = backoff > max_ns / 2 ? max_ns : backoff * 2;
  }
  return std::min(backoff, max_ns);
}

struct ReplicaLauncher::Replica {
  int index = 0;
  int port = 0;
  std::string command;   // substituted
  std::string log_path;  // empty: inherit
  std::unique_ptr<supervisor::WorkerGroup> group;
  bool running = false;
  int pid = -1;
  bool kill_requested = false;  // the running process was SIGKILLed by Kill()
  int64_t oom_kills_at_spawn = -1;
  int consecutive_crashes = 0;
  bool restart_pending = false;
  int64_t restart_at_ns = 0;
  int restarts = 0;
};

ReplicaLauncher::ReplicaLauncher(LaunchOptions options, Listener listener, std::vector<int> ports)
    : options_(std::move(options)), listener_(std::move(listener)), ports_(std::move(ports)) {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.starts_with("TITAN_REPLICA_INDEX=") || entry.starts_with("TITAN_REPLICA_PORT=")) {
      continue;
    }
    env_.emplace_back(entry);
  }
  pids_.assign(ports_.size(), -1);
  restarts_.assign(ports_.size(), 0);
}

Result<std::unique_ptr<ReplicaLauncher>> ReplicaLauncher::Start(LaunchOptions options,
                                                                Listener listener) {
  TITAN_RETURN_IF_ERROR(Validate(options));
  std::vector<int> ports = options.ports;
  if (ports.empty()) {
    TITAN_ASSIGN_OR_RETURN(ports, PickFreePorts(options.host, options.replicas));
  }
  if (!options.log_dir.empty()) TITAN_RETURN_IF_ERROR(MakeDirs(options.log_dir));
  std::unique_ptr<ReplicaLauncher> launcher(
      new ReplicaLauncher(std::move(options), std::move(listener), std::move(ports)));
  ReplicaLauncher* self = launcher.get();
  self->thread_ = std::thread([self] { self->Run(); });
  Status started;
  {
    std::unique_lock<std::mutex> lock(self->mu_);
    self->done_.wait(lock, [self] { return self->started_; });
    started = self->start_status_;
  }
  if (!started.ok()) {
    self->Stop();  // the thread has stopped what it spawned; joins it
    return started;
  }
  return launcher;
}

ReplicaLauncher::~ReplicaLauncher() { Stop(); }

std::vector<std::string> ReplicaLauncher::urls() const {
  const bool v6 = options_.host.find(':') != std::string::npos && options_.host[0] != '[';
  std::vector<std::string> out;
  for (int port : ports_) {
    out.push_back(v6 ? fmt::format("http://[{}]:{}", options_.host, port)
                     : fmt::format("http://{}:{}", options_.host, port));
  }
  return out;
}

int ReplicaLauncher::port(int index) const {
  return index >= 0 && index < replicas() ? ports_[index] : 0;
}

int ReplicaLauncher::pid(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index >= 0 && index < replicas() ? pids_[index] : -1;
}

int ReplicaLauncher::restarts(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return index >= 0 && index < replicas() ? restarts_[index] : 0;
}

void ReplicaLauncher::Kill(int index) {
  if (index < 0 || index >= replicas()) return;
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_requested_) return;
  kill_requests_.push_back(index);
  const uint64_t ticket = ++kills_requested_;
  wake_.notify_all();
  if (tls_launcher == this) return;  // from the listener: served after it returns
  done_.wait(lock, [&] { return kills_served_ >= ticket || stop_requested_; });
}

void ReplicaLauncher::Stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mu_);
  if (joined_) return;
  TITAN_CHECK(tls_launcher != this) << "ReplicaLauncher::Stop() called from its own listener";
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  done_.notify_all();  // a waiting Kill()
  if (thread_.joinable()) thread_.join();
  joined_ = true;
}

void ReplicaLauncher::Emit(ReplicaProcessEvent event) {
  if (event.mono_ns == 0) event.mono_ns = MonoNowNs();
  if (listener_) listener_(event);
}

Status ReplicaLauncher::SpawnReplica(Replica& r) {
  const bool restart = r.group->workers().size() > 0;
  if (!r.group->AllExited()) return InternalError("replica spawned while it runs");
  r.group->Clear();
  if (!r.log_path.empty()) {
    TITAN_RETURN_IF_ERROR(AppendLine(
        r.log_path,
        fmt::format("--- titan gateway: starting replica {} on port {}{}: {}\n", r.index, r.port,
                    restart ? fmt::format(" (restart {})", r.restarts + 1) : "", r.command)));
  }
  supervisor::WorkerSpec spec;
  spec.local_rank = r.index;
  spec.rank = r.index;
  spec.argv = {"/bin/sh", "-c", r.command};
  spec.env = env_;
  spec.env.push_back(fmt::format("TITAN_REPLICA_INDEX={}", r.index));
  spec.env.push_back(fmt::format("TITAN_REPLICA_PORT={}", r.port));
  spec.log_path = r.log_path;
  TITAN_RETURN_IF_ERROR(r.group->Spawn(spec));
  const supervisor::Worker& w = r.group->workers().back();
  r.running = true;
  r.pid = w.pid;
  r.kill_requested = false;
  r.oom_kills_at_spawn = r.group->cgroup().OomKills();
  if (restart) ++r.restarts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pids_[r.index] = r.pid;
    restarts_[r.index] = r.restarts;
  }
  Emit({r.index, "spawned", r.port, r.pid, restart ? fmt::format("restart {}", r.restarts) : "",
        w.exec_mono_ns});
  return OkStatus();
}

void ReplicaLauncher::HandleExit(Replica& r) {
  const supervisor::Worker& w = r.group->workers().back();
  r.running = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pids_[r.index] = -1;
  }
  std::string detail = supervisor::DescribeWaitStatus(w.wait_status);
  if (r.kill_requested) detail += "; killed by Kill()";
  const int64_t oom = r.group->cgroup().OomKills();
  if (r.oom_kills_at_spawn >= 0 && oom > r.oom_kills_at_spawn) detail += "; memory.max reached";
  Emit({r.index, "exited", r.port, w.pid, detail, w.exit_mono_ns});
  r.group->KillLeftovers();  // frees the port for the restart
  if (w.exit_mono_ns - w.exec_mono_ns >= options_.restart_reset_after_ns) {
    r.consecutive_crashes = 0;
  }
  ++r.consecutive_crashes;
  const int64_t backoff = BackoffForCrash(
      r.consecutive_crashes, options_.restart_initial_backoff_ns, options_.restart_max_backoff_ns);
  r.restart_pending = true;
  r.restart_at_ns = MonoNowNs() + backoff;
  Emit({r.index, "restart_scheduled", r.port, -1, DescribeBackoff(backoff), 0});
}

void ReplicaLauncher::Run() {
  tls_launcher = this;
  supervisor::WorkerGroupOptions group_options;
  group_options.reap_any_child = false;
  group_options.cgroup_prefix = "titan-gateway";
  group_options.memory_max_bytes = options_.memory_max_bytes;
  group_options.log_component = kComponent;
  int without = 0;
  Status why;
  for (int i = 0; i < replicas(); ++i) {
    auto r = std::make_unique<Replica>();
    r->index = i;
    r->port = ports_[i];
    r->command = SubstituteCommand(options_.command, r->port, i);
    if (!options_.log_dir.empty()) {
      r->log_path = fmt::format("{}/replica-{}.log", options_.log_dir, i);
    }
    r->group = std::make_unique<supervisor::WorkerGroup>(group_options);
    if (Status s = r->group->SetUpCgroup(); !s.ok()) {
      ++without;
      if (why.ok()) why = s;
    }
    replicas_.push_back(std::move(r));
  }
  if (without > 0 && options_.memory_max_bytes > 0) {
    Log(LogLevel::kWarning, kComponent,
        "replicas run without their memory.max of {} bytes ({} of {}): {}",
        options_.memory_max_bytes, without, replicas(), why.message());
  } else if (without > 0) {
    Log(LogLevel::kDebug, kComponent, "replicas run without a cgroup of their own: {}",
        why.message());
  }

  Status start;
  for (auto& r : replicas_) {
    start = SpawnReplica(*r);
    if (!start.ok()) {
      start = start.WithContext(fmt::format("starting replica {}", r->index));
      break;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    start_status_ = start;
    started_ = true;
  }
  done_.notify_all();

  while (start.ok()) {
    std::vector<int> kills;
    {
      std::unique_lock<std::mutex> lock(mu_);
      int64_t wait_ns = kPollNs;
      const int64_t now = MonoNowNs();
      for (const auto& r : replicas_) {
        if (r->restart_pending)
          wait_ns = std::min(wait_ns, std::max<int64_t>(0, r->restart_at_ns - now));
      }
      wake_.wait_for(lock, std::chrono::nanoseconds(wait_ns),
                     [this] { return stop_requested_ || !kill_requests_.empty(); });
      if (stop_requested_) break;
      kills.swap(kill_requests_);
    }
    for (int i : kills) {
      Replica& r = *replicas_[i];
      if (!r.running) continue;
      r.kill_requested = true;
      r.group->SignalGroup(0, SIGKILL);  // the leader is not reaped yet: the group id is ours
    }
    if (!kills.empty()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        kills_served_ += kills.size();
      }
      done_.notify_all();
    }
    for (auto& r : replicas_) {
      if (r->running && !r->group->Reap().empty()) HandleExit(*r);
    }
    const int64_t now = MonoNowNs();
    for (auto& r : replicas_) {
      if (!r->restart_pending || now < r->restart_at_ns) continue;
      r->restart_pending = false;
      if (Status s = SpawnReplica(*r); !s.ok()) {
        Emit({r->index, "spawn_failed", r->port, -1, std::string(s.message()), 0});
        ++r->consecutive_crashes;
        const int64_t backoff =
            BackoffForCrash(r->consecutive_crashes, options_.restart_initial_backoff_ns,
                            options_.restart_max_backoff_ns);
        r->restart_pending = true;
        r->restart_at_ns = MonoNowNs() + backoff;
        Emit({r->index, "restart_scheduled", r->port, -1, DescribeBackoff(backoff), 0});
      }
    }
  }
  StopAll();
}

void ReplicaLauncher::StopAll() {
  const int64_t deadline = MonoNowNs() + options_.stop_grace_ns;
  // Every group hears SIGTERM at once, so that the grace runs for all in parallel.
  for (auto& r : replicas_) {
    r->restart_pending = false;
    if (r->running) {
      r->group->SignalAll(SIGTERM);
      r->group->SignalAll(SIGCONT);
    }
  }
  for (auto& r : replicas_) {
    if (!r->running) continue;
    const int killed = r->group->Stop(std::max<int64_t>(0, deadline - MonoNowNs()));
    const supervisor::Worker& w = r->group->workers().back();
    r->running = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pids_[r->index] = -1;
    }
    std::string detail = supervisor::DescribeWaitStatus(w.wait_status);
    if (killed > 0) detail += "; SIGKILLed after the stop grace";
    Emit({r->index, "stopped", r->port, w.pid, detail, w.exit_mono_ns});
  }
  for (auto& r : replicas_) {
    r->group->KillLeftovers();
    r->group
        .reset();  // kills what is left in its groups, releases its guardian, removes its cgroup
  }
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
}

}  // namespace titan::gateway
