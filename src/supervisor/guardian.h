// Guardian: kills what is left of the workers when `titan run` itself dies without a chance to
// clean up (SIGKILL, the OOM killer, a crash).
//
// PR_SET_PDEATHSIG kills each worker when titan run dies, but not the worker's own children: a
// worker started as `bash train.sh` dies and leaves its python running on the GPUs. The guardian
// is a small process forked by Start() that holds one end of a socket pair whose other end only
// titan run holds (close-on-exec, so workers never inherit it). titan run tells it the process
// group of each worker it starts (Watch) and of each group known to be empty (Forget). When the
// socket reaches end of file without a Release() first, titan run is gone: the guardian SIGKILLs
// every process group it watches and exits. A process group id is not reused while any member
// lives, so this never hits a stranger.
//
// The guardian sits in its own process group and ignores SIGINT, SIGTERM and SIGHUP (those go
// to titan run, which stops the workers itself and then calls Release()); it closes
// every descriptor it inherited (so it never holds a caller's stdout pipe open), and uses only
// async-signal-safe calls (it is forked from a multi-threaded process).
// The guardian is named "titan-guardian" (PR_SET_NAME: /proc/PID/comm) and overwrites the
// argument strings it inherited from titan run (the range that fields 48-49 of /proc/self/stat
// give) with that name, NUL-padded and cut to their length, so that /proc/PID/cmdline never
// reads "titan run" and `pkill -f "titan run"` never hits it. Start() returns once it has.
// Limits: without a job cgroup, a grandchild that left the worker's process group (setsid) is
// not found; it watches at most kMaxGroups groups at once (more are ignored, and Watch returns
// false).
// Thread safety: not thread-safe; owned by one thread (WorkerGroup's).
#pragma once

#include <sys/types.h>

#include <string>

#include "src/base/status.h"

namespace titan::supervisor {

class Guardian {
 public:
  static constexpr int kMaxGroups = 4096;

  Guardian() = default;
  ~Guardian();  // Release()
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;

  // Forks the guardian process. Calling it again while one runs is a no-op. With a cgroup
  // directory (JobCgroup), the guardian also kills everything in it (cgroup.kill) and removes
  // it, which reaches processes that left their worker's process group.
  Status Start(const std::string& cgroup_dir = "");
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Process group `pgid` is to be killed if titan run dies. False if not running or full.
  bool Watch(pid_t pgid);
  // Process group `pgid` no longer needs watching (it is empty).
  void Forget(pid_t pgid);
  // Clean shutdown: the guardian exits without killing anything; reaps it.
  void Release();

 private:
  bool Send(int32_t message);

  pid_t pid_ = -1;
  int write_fd_ = -1;  // titan run's end of the socket pair
  int watched_ = 0;    // approximate count, for the kMaxGroups bound
};

}  // namespace titan::supervisor
