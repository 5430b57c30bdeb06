// WorkerGroup: the worker processes of one generation on this node.
//
// Each worker is started with fork + exec in its own process group (setpgid), with
// PR_SET_PDEATHSIG(SIGKILL) so that it dies with `titan run` even if `titan run` is SIGKILLed,
// and with the signal mask and dispositions reset. Exec failures (COMMAND not found, not
// executable) are reported synchronously through a close-on-exec pipe, which also timestamps
// the moment the exec succeeded. Stop() terminates whole process groups: SIGTERM (+SIGCONT, so a
// stopped worker can act on it), a grace period, then SIGKILL to the group, and reaps.
//
// A Guardian (guardian.h) watches every worker's process group, so that even a SIGKILLed
// `titan run` leaves no grandchild of a worker behind; destroying the group kills what is left in
// every group it started, including children of workers that exited. Where a cgroup v2 directory
// can be made (job_cgroup.h: root or delegation), every worker also runs in the job's cgroup,
// and Stop(), destruction and the guardian kill the whole cgroup: that reaches processes that
// left their process group (setsid) too. With SetLeftoversRecord(), the group also keeps a record
// of its process groups and cgroup in a file (leftovers.h), so that the next titan run cleans
// up after a titan run killed together with its guardian; destruction removes the record once
// everything it names is killed.
//
// The caller must block SIGCHLD (and read it via signalfd or poll) or poll, and call Reap() to
// collect exits. By default Reap() waits for any child (waitpid(-1)): the process should have no
// other children whose exit status it needs. With WorkerGroupOptions::reap_any_child = false it
// waits for its own workers by pid only, so that several WorkerGroups can share a process (e.g.
// one per gateway replica, each with its own cgroup). SIGCHLD must not be SIG_IGN (the kernel
// would reap the workers itself). Thread safety: not thread-safe; owned by the supervisor loop
// thread, which must be the thread that spawns (PDEATHSIG follows the spawning thread).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/supervisor/guardian.h"
#include "src/supervisor/job_cgroup.h"
#include "src/supervisor/leftovers.h"

namespace titan::supervisor {

struct WorkerSpec {
  int local_rank = 0;
  int rank = 0;
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // the complete environment, "KEY=VALUE"
  std::string log_path;           // empty: inherit stdout/stderr; else both go to this file
  // >= 0: the worker's stdout / stderr (RankLogs' pipes); they take precedence over log_path.
  int stdout_fd = -1;
  int stderr_fd = -1;
};

struct Worker {
  int local_rank = 0;
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  int wait_status = 0;            // as from waitpid, valid once !running
  int64_t exec_mono_ns = 0;       // when exec succeeded
  int64_t exit_mono_ns = 0;       // when the exit was reaped
  bool stopped_by_titan = false;  // exit caused by Stop()
};

struct WorkerGroupOptions {
  // Reap(): true: waitpid(-1), any child (titan run, a child subreaper, also collects orphaned
  // grandchildren); false: only this group's workers, by pid.
  bool reap_any_child = true;
  // The cgroup directory's name: <prefix>-<pid>-<n> (JobCgroup::Create).
  std::string cgroup_prefix = "titan-run";
  // > 0: memory.max of the group's cgroup (JobCgroup::SetMemoryMax), where the machine allows it.
  int64_t memory_max_bytes = 0;
  // The component of the group's log lines.
  std::string log_component = "run";
};

// "exit code 3", "signal 9 (Killed)".
std::string DescribeWaitStatus(int wait_status);
bool WaitStatusSuccess(int wait_status);

class WorkerGroup {
 public:
  WorkerGroup() = default;
  explicit WorkerGroup(WorkerGroupOptions options) : options_(std::move(options)) {}
  ~WorkerGroup();  // kills (SIGKILL) whatever still runs in any group it started, and reaps
  WorkerGroup(const WorkerGroup&) = delete;
  WorkerGroup& operator=(const WorkerGroup&) = delete;

  // Makes the group's cgroup (and sets memory.max) now, instead of the first Spawn, which logs
  // the outcome. Returns why the workers will run without a cgroup of their own (then
  // !cgroup().valid()) or without memory.max; the caller decides how to report it. Has effect
  // only once, before the first Spawn; OK after.
  Status SetUpCgroup();
  // From now on keeps the record of what to clean up in `path` (replaced atomically on every
  // change: each Spawn, each group found empty); call before the first Spawn. A failure to
  // write it is logged once.
  void SetLeftoversRecord(std::string path) { leftovers_path_ = std::move(path); }
  // Starts one worker; on exec failure returns an error naming the command and errno and no
  // process is left behind.
  Status Spawn(const WorkerSpec& spec);
  // Collects exits without blocking; returns indices (into workers()) that exited now.
  std::vector<size_t> Reap();
  // SIGTERM every running group, wait up to grace_ns for exits, SIGKILL the groups, reap.
  // Returns the number of workers that had to be SIGKILLed.
  int Stop(int64_t grace_ns);
  // Sends `sig` to the process group of worker i (no-op if it exited).
  void SignalGroup(size_t i, int sig);
  // Sends `sig` to every running worker's group (e.g. SIGTERM forwarded on preemption).
  void SignalAll(int sig);
  // Waits up to timeout_ns for every worker to exit by itself (reaping); true if all exited.
  bool WaitAll(int64_t timeout_ns);
  // SIGKILLs what is left in the process groups of exited workers (a restart must not meet the
  // children of the previous worker) and, when no worker runs, everything in the cgroup.
  void KillLeftovers();
  bool AllExited() const;
  bool AllSucceeded() const;
  size_t running_count() const;
  const JobCgroup& cgroup() const { return cgroup_; }
  const std::vector<Worker>& workers() const { return workers_; }
  std::vector<Worker>& workers() { return workers_; }
  // Forgets exited workers (a new generation starts). Precondition: AllExited().
  void Clear();

 private:
  // Forgets (here and in the guardian) the groups with no process left in them.
  void PruneEmptyGroups();
  void SaveLeftovers();

  WorkerGroupOptions options_;
  std::vector<Worker> workers_;
  JobCgroup cgroup_;  // invalid where cgroups are not available to us
  bool cgroup_tried_ = false;
  Guardian guardian_;
  std::vector<RecordedGroup> groups_;  // process groups started here that may have members
  std::string leftovers_path_;         // empty: no record
  bool leftovers_saved_ = false;       // written at least once
  bool leftovers_warned_ = false;
};

}  // namespace titan::supervisor
