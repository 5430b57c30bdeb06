// MonitorHost: what titan run's monitoring loop (monitor.h) and its parts act on outside
// themselves: the clock, the wake-ups (signals, step events), and this node's worker processes.
// The Supervisor's implementation is CLOCK_MONOTONIC, a signalfd plus the EventQueue, and a
// WorkerGroup; a test implements it with a fake clock and fake workers, so the loop's decisions
// can be checked without processes.
//
// Contract: times are CLOCK_MONOTONIC ns (Now(); any fixed origin); every method is called from
// the loop's thread only; workers() stays valid until the next Reap() or StopWorkers().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/client/wire_parse.h"
#include "src/supervisor/failure_policy.h"
#include "src/supervisor/worker_group.h"

namespace titan::supervisor {

class MonitorHost {
 public:
  virtual ~MonitorHost() = default;

  virtual int64_t Now() = 0;
  // Blocks until a signal or a step event arrives, or `timeout_ns` passed. Returns the stop
  // signal received so far (SIGTERM, SIGINT or SIGHUP; it stays set), 0 if none.
  virtual int WaitForInput(int64_t timeout_ns) = 0;
  // The step events received since the last call, oldest first.
  virtual std::vector<wire::ParsedEvent> DrainEvents() = 0;
  // How many step events were dropped (a full queue) since the start.
  virtual uint64_t EventsDropped() = 0;

  // The workers of the current generation (WorkerGroup::workers()).
  virtual const std::vector<Worker>& workers() = 0;
  // Collects exits without blocking: indices into workers() that exited now.
  virtual std::vector<size_t> Reap() = 0;
  // Terminates every worker (SIGTERM, `grace_ns`, SIGKILL); returns how many were SIGKILLed.
  virtual int StopWorkers(int64_t grace_ns) = 0;
  // Sends `sig` to one worker process (fault injection: SIGKILL, SIGSTOP, SIGCONT).
  virtual void Signal(pid_t pid, int sig) = 0;
  // /proc's state letter of a worker ('T': stopped), '?' when unknown.
  virtual char ProcessState(pid_t pid) = 0;
  // Asks the running workers for their Flight Recorder dumps and writes their stacks to the event
  // log (failure_evidence.h, stack_capture.h); may block seconds.
  virtual void CaptureStacks() = 0;
  // OOM kills in the workers' cgroup so far; -1 when unknown (no cgroup with a memory controller).
  virtual int64_t OomKills() = 0;
  // Once the workers of the failed generation are stopped: gathers what they left (their output,
  // the kernel log of the window, dumps) and diagnoses it (failure_evidence.h). `incident` gets the
  // incident's JSON (null if none).
  virtual FailureFacts DiagnoseFailure(const std::string& kind, int64_t step,
                                       nlohmann::json* incident) = 0;
  // Sleeps `ns` (a wait for other nodes inside a decision).
  virtual void Sleep(int64_t ns) = 0;
  // A node-loss drill: kills the workers and exits the process without releasing the lease.
  [[noreturn]] virtual void ExitAsLostNode() = 0;
};

}  // namespace titan::supervisor
