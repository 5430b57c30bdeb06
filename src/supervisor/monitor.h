// Monitor: titan run's loop over one generation of workers on this node. Each tick (20 ms, or
// sooner on a signal or step event) it reads the step events (RankEvents), the workers' exits,
// the injections due, the hang and straggler detectors, the other nodes (Rendezvous::Poll) and
// Slurm's view of this node, and ends the generation with an Outcome:
//   a stop signal                      -> kPreempted (kSucceededLocally once every local
//                                         worker exited 0)
//   a worker exits non-zero / signal   -> "crash": Recovery::Fail, kRestart (in a multi-node
//                                         job an exit code first waits up to a lease TTL for
//                                         another node's claim or a lost node)
//   a rank silent past its hang bound  -> "hang": stacks captured, Recovery::Fail, kRestart
//   a persistent straggler             -> reported; with --straggler-action=exclude, kRestart
//   another node restarted / lost      -> Recovery::Follow / LostNodes, kRestart
//   every local worker exited 0        -> kSucceeded once every node is done (the store),
//                                         kSucceededLocally when the store stays unreachable
//                                         for --finish-timeout
//   Slurm says this node is lost       -> kFatal
// and keeps the outputs (metrics, steps, prefetch, isolations) current meanwhile.
//
// Ownership: owns RankEvents and Recovery; holds references to the options, host, log, ledger,
// rendezvous and outputs (owned by the Supervisor, which outlives it) and an optional Slurm
// watch. Times are the host's monotonic ns. Thread safety: not thread-safe; one thread runs it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/cluster/slurm.h"
#include "src/supervisor/monitor_host.h"
#include "src/supervisor/rank_events.h"
#include "src/supervisor/recovery.h"
#include "src/supervisor/run_outputs.h"

namespace titan::supervisor {

class Monitor {
 public:
  // `slurm_watch` may be null (no --slurm-watch); `start_ns` is when titan run started (the
  // origin of time-triggered injections).
  Monitor(const RunOptions& options, int64_t start_ns, MonitorHost& host, RunLog& log,
          GoodputLedger& ledger, Rendezvous& rdzv, RunOutputs& outputs, const RestartBudget& budget,
          cluster::SlurmNodeWatch* slurm_watch);
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // Watches the workers of generation `a` (already spawned in the host, at wall time
  // `gen_wall_start_ns`) until the generation ends; see above.
  Outcome Run(const Assignment& a, int64_t gen_wall_start_ns);

  // Step events outside Run (the final checkpoint while preempted).
  void HandleEvents(const std::vector<wire::ParsedEvent>& events, int64_t now);

  Recovery& recovery() { return recovery_; }
  // How long the last stop of the workers took.
  int64_t stop_ns() const { return stop_ns_; }
  // Why Run returned kSucceededLocally.
  const std::string& finish_reason() const { return finish_reason_; }

 private:
  std::optional<Outcome> ConfirmDone(const Assignment& a, int64_t now);
  Outcome Crash(const Worker& w);
  bool Hang(const HangDetector::Verdict& v, Outcome* outcome);
  std::optional<Outcome> Stragglers();
  void StopWorkers();
  void StoreUnreachable(const Status& status, int64_t now);
  void StoreReachable(int64_t now);

  const RunOptions& o_;
  const int64_t start_ns_;
  MonitorHost& host_;
  RunLog& log_;
  GoodputLedger& ledger_;
  Rendezvous& rdzv_;
  RunOutputs& outputs_;
  cluster::SlurmNodeWatch* slurm_watch_;
  RankEvents events_;
  Recovery recovery_;
  Assignment current_;
  int64_t stop_ns_ = 0;
  int64_t hang_deferred_until_ns_ = 0;
  int64_t store_down_since_ns_ = 0;  // monotonic ns of the first failure of an outage; 0: up
  bool marked_done_ = false;         // this node's completion is recorded in the store
  int64_t next_done_try_ns_ = 0;
  std::string finish_reason_;        // for Outcome::kSucceededLocally
  int64_t oom_kills_at_start_ = -1;  // the workers' cgroup's OOM kills when the generation began
};

}  // namespace titan::supervisor
