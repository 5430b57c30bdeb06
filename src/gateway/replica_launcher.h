// ReplicaLauncher: the replica processes that `titan gateway --launch CMD --replicas N` starts,
// keeps running and stops.
//
// Contract. Start() picks one port per replica (LaunchOptions::ports, or free ports found by
// binding port 0 on `host`), substitutes "{port}" and "{index}" in the command and runs it with
// /bin/sh -c, each replica in its own process group, with PR_SET_PDEATHSIG(SIGKILL), and watched
// by a guardian process that SIGKILLs the replica's whole process group (and its cgroup, where
// there is one) if the gateway itself is SIGKILLed (src/supervisor/worker_group.h). Each replica
// also gets TITAN_REPLICA_INDEX and TITAN_REPLICA_PORT in its environment. A replica that exits
// while the launcher runs (a crash, an exit of its own, Kill()) has what is left of its process
// group killed (so its port is free again) and is restarted on the same port after a back-off:
// restart_initial_backoff_ns, doubling per consecutive crash up to restart_max_backoff_ns; a
// replica that stayed up restart_reset_after_ns or longer starts again from the initial back-off.
// A restart that cannot spawn (e.g. the log file cannot be opened) is reported and retried the
// same way. Stop() ends everything: SIGTERM (+SIGCONT) to every process group, stop_grace_ns,
// SIGKILL to the groups and cgroups, reap; nothing is restarted after it and no process of a
// replica (grandchildren included) is left behind. What the launcher cannot reach: a grandchild
// that left its replica's process group (setsid, a daemon) where there is no cgroup.
//
// memory_max_bytes > 0 puts each replica in a cgroup v2 directory of its own
// (<our cgroup>/titan-gateway-<pid>-<n>, which needs root or a delegated cgroup) with that
// memory.max; the kernel OOM-kills inside it and the launcher reports the exit ("...; memory.max
// reached"). Where the machine does not allow it (no cgroup v2, no write access, no memory
// controller, e.g. on a hybrid v1/v2 machine) one log line says why and replicas run without
// the limit. Without memory_max_bytes each replica still gets a cgroup (for cgroup.kill at Stop)
// where one can be made (a debug log line says why not otherwise).
//
// Threading. One launcher thread, started by Start(), spawns every replica (PDEATHSIG follows the
// spawning thread), reaps (waitpid by pid, every 20 ms; it never uses waitpid(-1) or SIGCHLD, so
// other children of the process are left alone, but SIGCHLD must not be set to SIG_IGN), restarts
// and stops. The public methods are thread-safe. The Listener is called on the launcher thread
// (for Start()'s initial "spawned" events too, before Start() returns), never with a lock held:
// it must be quick, thread-safe, and must not call Stop() or destroy the launcher (Kill(), pid(),
// restarts(), urls() are fine).
//
// Errors. Start(): INVALID_ARGUMENT for a command without "{port}", replicas < 1, a ports list
// whose size is not `replicas` or has an invalid or repeated port, bad backoffs; errors naming
// the cause when no free port can be found, the log directory cannot be made or a replica cannot
// be spawned (the replicas spawned so far are stopped again). Later spawn failures are events
// ("spawn_failed"), not errors.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/base/status.h"

namespace titan::gateway {

struct LaunchOptions {
  // A shell command line with "{port}" (required) and optionally "{index}" (0-based), run with
  // /bin/sh -c. Use `exec` so that the replica is the shell's process (signals reach it directly).
  std::string command;
  int replicas = 1;
  // What urls() name and where free ports are looked for (an IP address or a resolvable name).
  std::string host = "127.0.0.1";
  // One port per replica; empty: free ports are picked once, at Start(). A restart reuses the
  // replica's port.
  std::vector<int> ports;
  // Non-empty: replica i's stdout and stderr are appended to <log_dir>/replica-<i>.log (the
  // directory is made if missing), each start preceded by a line from the launcher. Empty:
  // replicas inherit the gateway's stdout and stderr.
  std::string log_dir;
  // > 0: each replica in its own cgroup v2 with this memory.max, where the machine allows it.
  int64_t memory_max_bytes = 0;
  int64_t restart_initial_backoff_ns = 1'000'000'000;
  int64_t restart_max_backoff_ns = 30'000'000'000;
  // A replica that stayed up this long starts its next back-off from the initial one again.
  int64_t restart_reset_after_ns = 60'000'000'000;
  // Stop(): how long replicas get to exit after SIGTERM before SIGKILL.
  int64_t stop_grace_ns = 10'000'000'000;
};

struct ReplicaProcessEvent {
  int index = 0;
  // "spawned", "exited" (not by Stop(): a crash, an exit of its own, Kill()),
  // "restart_scheduled", "stopped" (by Stop()), "spawn_failed".
  std::string type;
  int port = 0;
  int pid = -1;  // the process the event is about; -1 for "spawn_failed" and "restart_scheduled"
  // "exited"/"stopped": "signal 9 (Killed)", "exit code 1" (+ "; killed by Kill()",
  // "; memory.max reached", "; SIGKILLed after the stop grace"); "restart_scheduled": "in 2s";
  // "spawn_failed": the error; "spawned": "" or "restart 3".
  std::string detail;
  int64_t mono_ns = 0;  // MonoNowNs() when it happened
};

class ReplicaLauncher {
 public:
  using Listener = std::function<void(const ReplicaProcessEvent&)>;

  // Validates the options, picks ports and spawns every replica (on the launcher thread) before
  // returning. `listener` may be empty.
  static Result<std::unique_ptr<ReplicaLauncher>> Start(LaunchOptions options, Listener listener);

  ~ReplicaLauncher();  // Stop()
  ReplicaLauncher(const ReplicaLauncher&) = delete;
  ReplicaLauncher& operator=(const ReplicaLauncher&) = delete;

  // "http://HOST:PORT" per replica (IPv6 hosts in brackets), in index order; fixed for the
  // launcher's life.
  std::vector<std::string> urls() const;
  int replicas() const { return static_cast<int>(ports_.size()); }
  int port(int index) const;  // 0 for an index out of range

  // SIGKILLs replica `index`'s process group now (the gateway found it hung); it is then
  // restarted like a crashed one. Returns once the signal is sent (at once when called from the
  // listener). No-op while the replica is not running (in its back-off), after Stop(), or for an
  // index out of range.
  void Kill(int index);
  // SIGTERM every group, wait up to stop_grace_ns, SIGKILL, reap, join the launcher thread; no
  // restart after. Idempotent; blocks until done; leaves no replica process behind.
  void Stop();

  int pid(int index) const;       // the replica's current pid; -1 while it is not running
  int restarts(int index) const;  // how often it was spawned again after an exit

 private:
  struct Replica;
  ReplicaLauncher(LaunchOptions options, Listener listener, std::vector<int> ports);
  void Run();
  void Emit(ReplicaProcessEvent event);
  Status SpawnReplica(Replica& replica);
  void HandleExit(Replica& replica);
  void StopAll();

  const LaunchOptions options_;
  const Listener listener_;
  const std::vector<int> ports_;
  std::vector<std::string> env_;                    // the gateway's environment at Start()
  std::vector<std::unique_ptr<Replica>> replicas_;  // touched by the launcher thread only

  mutable std::mutex mu_;
  std::condition_variable wake_;  // to the launcher thread: a request or Stop
  std::condition_variable done_;  // from it: started, a Kill() served
  bool started_ = false;          // the initial spawns are done (start_status_ is set)
  Status start_status_;
  bool stop_requested_ = false;
  bool stopped_ = false;  // StopAll() finished
  std::vector<int> kill_requests_;
  uint64_t kills_requested_ = 0, kills_served_ = 0;
  std::vector<int> pids_;      // per replica, -1 when not running
  std::vector<int> restarts_;  // per replica
  std::mutex stop_mu_;         // serializes Stop() callers
  bool joined_ = false;
  std::thread thread_;
};

// "{port}" and "{index}" replaced (every occurrence).
std::string SubstituteCommand(const std::string& command, int port, int index);
// "in 2s", "in 250ms", "in 1.5s".
std::string DescribeBackoff(int64_t ns);
// The back-off before restart number `consecutive` (1 for the first crash in a row).
int64_t BackoffForCrash(int consecutive, int64_t initial_ns, int64_t max_ns);

}  // namespace titan::gateway
