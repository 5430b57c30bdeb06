#include "src/supervisor/worker_group.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "src/base/atomic_file.h"
#include "src/base/clock.h"
#include "src/base/log.h"

namespace titan::supervisor {

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return fmt::format("exit code {}", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    const char* name = strsignal(sig);
    return fmt::format("signal {} ({})", sig, name ? name : "?");
  }
  return fmt::format("wait status {}", wait_status);
}

bool WaitStatusSuccess(int wait_status) {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

WorkerGroup::~WorkerGroup() {
  PruneEmptyGroups();
  for (const RecordedGroup& group : groups_) ::kill(-group.pgid, SIGKILL);  // exited ones too
  for (Worker& w : workers_) {
    if (w.running) {
      ::kill(w.pid, SIGKILL);
      int st = 0;
      while (::waitpid(w.pid, &st, 0) < 0 && errno == EINTR) {
      }
      w.running = false;
    }
  }
  guardian_.Release();
  if (leftovers_saved_) {
    cgroup_ = JobCgroup();  // kills and removes it before the record goes
    ::unlink(leftovers_path_.c_str());
  }
}

void WorkerGroup::PruneEmptyGroups() {
  const size_t erased = std::erase_if(groups_, [this](const RecordedGroup& group) {
    if (::kill(-group.pgid, 0) == 0 || errno != ESRCH) return false;
    guardian_.Forget(group.pgid);
    return true;
  });
  if (erased > 0) SaveLeftovers();
}

void WorkerGroup::SaveLeftovers() {
  if (leftovers_path_.empty()) return;
  Status saved = [&]() -> Status {
    TITAN_ASSIGN_OR_RETURN(LeftoversRecord record, OwnLeftoversRecord());
    record.groups = groups_;
    if (cgroup_.valid()) record.cgroup_dir = cgroup_.dir();
    return WriteFileAtomically(leftovers_path_, FormatLeftovers(record));
  }();
  if (saved.ok()) {
    leftovers_saved_ = true;
  } else if (!leftovers_warned_) {
    leftovers_warned_ = true;
    Log(LogLevel::kWarning, options_.log_component,
        "{}: if titan run and its guardian are both killed, the next titan run cannot clean up",
        saved.ToString());
  }
}

Status WorkerGroup::SetUpCgroup() {
  if (cgroup_tried_) return OkStatus();
  cgroup_tried_ = true;
  auto cgroup = JobCgroup::Create(options_.cgroup_prefix);
  if (!cgroup.ok()) return cgroup.status();
  cgroup_ = std::move(cgroup).value();
  if (options_.memory_max_bytes > 0) return cgroup_.SetMemoryMax(options_.memory_max_bytes);
  return OkStatus();
}

Status WorkerGroup::Spawn(const WorkerSpec& spec) {
  if (spec.argv.empty()) return InvalidArgumentError("no command to run after '--'");
  if (!cgroup_tried_) {
    Status cgroup = SetUpCgroup();
    if (!cgroup.ok() && !cgroup_.valid()) {
      Log(LogLevel::kInfo, options_.log_component,
          "workers run without a cgroup of their own ({}); a process that leaves its worker's "
          "process group (setsid) is not stopped with it",
          cgroup.message());
    } else if (!cgroup.ok()) {
      Log(LogLevel::kWarning, options_.log_component, "workers run without memory.max ({})",
          cgroup.message());
    }
  }
  if (!guardian_.running()) {
    Status started = guardian_.Start(cgroup_.valid() ? cgroup_.dir() : std::string());
    if (!started.ok()) {
      Log(LogLevel::kWarning, options_.log_component,
          "{}: grandchildren of workers may outlive a SIGKILLed titan", started.ToString());
    }
  }
  if (!leftovers_saved_) SaveLeftovers();  // the cgroup, before anything runs in it
  // Everything the child needs is prepared before fork: after fork only async-signal-safe calls.
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const char* cgroup_procs = cgroup_.valid() ? cgroup_.procs_path().c_str() : nullptr;
  const char* memory_procs =
      cgroup_.memory_procs_path().empty() ? nullptr : cgroup_.memory_procs_path().c_str();
  std::vector<char*> envp;
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // PATH lookup with the worker's PATH (execvpe uses the caller's environ for PATH).
  int log_fd = -1;
  if (!spec.log_path.empty()) {
    log_fd = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) return ErrnoError(errno, "opening worker log " + spec.log_path);
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    if (log_fd >= 0) ::close(log_fd);
    return ErrnoError(errno, "pipe2 for spawning a worker");
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    if (log_fd >= 0) ::close(log_fd);
    return ErrnoError(e, "fork for a worker");
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    if (cgroup_procs != nullptr) JobCgroup::JoinSelf(cgroup_procs);  // best effort
    if (memory_procs != nullptr) JobCgroup::JoinSelf(memory_procs);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    if (spec.stdout_fd >= 0 && spec.stderr_fd >= 0) {
      ::dup2(spec.stdout_fd, 1);
      ::dup2(spec.stderr_fd, 2);
    } else if (log_fd >= 0) {
      ::dup2(log_fd, 1);
      ::dup2(log_fd, 2);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    int e = errno;
    ssize_t n = ::write(pipe_fds[1], &e, sizeof(e));
    (void)n;
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent: no race with an early killpg
  ::close(pipe_fds[1]);
  if (log_fd >= 0) ::close(log_fd);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(pipe_fds[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  ::close(pipe_fds[0]);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return ErrnoError(child_errno,
                      fmt::format("starting worker command '{}' (check that it exists and is "
                                  "executable, and PATH)",
                                  spec.argv[0]));
  }
  guardian_.Watch(pid);
  // The child is not reaped yet, so its stat is there; a start of 0 matches any member.
  auto leader = ReadProcStat(pid);
  groups_.push_back({pid, leader.ok() ? leader->start : 0});
  SaveLeftovers();
  Worker w;
  w.local_rank = spec.local_rank;
  w.rank = spec.rank;
  w.pid = pid;
  w.running = true;
  w.exec_mono_ns = MonoNowNs();
  workers_.push_back(w);
  return OkStatus();
}

std::vector<size_t> WorkerGroup::Reap() {
  std::vector<size_t> exited;
  auto record = [&](pid_t pid, int st) {
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      if (w.running && w.pid == pid) {
        w.running = false;
        w.wait_status = st;
        w.exit_mono_ns = MonoNowNs();
        exited.push_back(i);
      }
    }
  };
  if (options_.reap_any_child) {
    // waitpid(-1): also reaps orphaned grandchildren re-parented to us (titan run is a child
    // subreaper), so that no zombie outlives its process group.
    while (true) {
      int st = 0;
      pid_t r = ::waitpid(-1, &st, WNOHANG);
      if (r <= 0) break;
      record(r, st);
    }
  } else {
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (!workers_[i].running) continue;
      int st = 0;
      pid_t r;
      do {
        r = ::waitpid(workers_[i].pid, &st, WNOHANG);
      } while (r < 0 && errno == EINTR);
      if (r == workers_[i].pid) record(r, st);
    }
  }
  if (!exited.empty()) PruneEmptyGroups();
  return exited;
}

void WorkerGroup::SignalGroup(size_t i, int sig) {
  if (i >= workers_.size()) return;
  // The group may outlive its leader (grandchildren); signal it even after the leader exited.
  ::kill(-workers_[i].pid, sig);
}

void WorkerGroup::SignalAll(int sig) {
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].running) SignalGroup(i, sig);
  }
}

bool WorkerGroup::WaitAll(int64_t timeout_ns) {
  int64_t deadline = MonoNowNs() + timeout_ns;
  while (true) {
    Reap();
    if (AllExited()) return true;
    if (MonoNowNs() >= deadline) return false;
    ::usleep(5000);
  }
}

int WorkerGroup::Stop(int64_t grace_ns) {
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (!workers_[i].running) continue;
    workers_[i].stopped_by_titan = true;
    SignalGroup(i, SIGTERM);
    SignalGroup(i, SIGCONT);
  }
  int killed = 0;
  if (!WaitAll(grace_ns)) {
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (workers_[i].running) ++killed;
    }
  }
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (workers_[i].stopped_by_titan) SignalGroup(i, SIGKILL);  // leftovers in the groups
  }
  // Processes that left their group (setsid) but not the job's cgroup.
  if (Status s = cgroup_.Kill(); !s.ok()) {
    Log(LogLevel::kWarning, options_.log_component, "killing the job's cgroup: {}", s.ToString());
  }
  WaitAll(int64_t{10} * kNsPerSecond);
  return killed;
}

void WorkerGroup::KillLeftovers() {
  PruneEmptyGroups();
  for (const RecordedGroup& group : groups_) {
    bool running = false;
    for (const Worker& w : workers_) running |= w.running && w.pid == group.pgid;
    if (!running) ::kill(-group.pgid, SIGKILL);
  }
  if (running_count() == 0) {
    if (Status s = cgroup_.Kill(); !s.ok()) {
      Log(LogLevel::kWarning, options_.log_component, "killing the cgroup: {}", s.ToString());
    }
  }
}

bool WorkerGroup::AllExited() const {
  for (const Worker& w : workers_) {
    if (w.running) return false;
  }
  return true;
}

bool WorkerGroup::AllSucceeded() const {
  for (const Worker& w : workers_) {
    if (w.running || !WaitStatusSuccess(w.wait_status)) return false;
  }
  return true;
}

size_t WorkerGroup::running_count() const {
  size_t n = 0;
  for (const Worker& w : workers_) n += w.running;
  return n;
}

void WorkerGroup::Clear() {
  PruneEmptyGroups();
  workers_.clear();
}

}  // namespace titan::supervisor
