// RankEvents: what the local ranks report, and the faults injected into them. Keeps each local
// rank's state for the current generation (its step, when the step began, injections), feeds
// the hang and straggler detectors, the goodput ledger (phases, checkpoints, steps of the lead
// rank) and the step window from the ranks' step events, writes the checkpoint events, and
// carries out --inject actions (crash: SIGKILL, hang: SIGSTOP, slow: SIGSTOP/SIGCONT duty cycle,
// node-loss: MonitorHost::ExitAsLostNode).
//
// Ownership: owns the per-rank state, the detectors and the injector; holds references to the
// options, log, ledger, step window and host, which outlive it. Times: `now` is the host's
// monotonic clock; event times (ParsedEvent::time_ns) are the senders' wall clock.
// Thread safety: not thread-safe; the monitoring loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/client/wire.h"
#include "src/client/wire_parse.h"
#include "src/supervisor/inject.h"
#include "src/supervisor/ledger.h"
#include "src/supervisor/monitor_host.h"
#include "src/supervisor/policy.h"
#include "src/supervisor/rendezvous.h"
#include "src/supervisor/run_log.h"
#include "src/supervisor/step_window.h"
#include "src/supervisor/supervisor.h"

namespace titan::supervisor {

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

class RankEvents {
 public:
  RankEvents(const RunOptions& options, MonitorHost& host, RunLog& log, GoodputLedger& ledger,
             StepWindow& steps)
      : o_(options),
        host_(host),
        log_(log),
        ledger_(ledger),
        steps_(steps),
        hang_(options.hang),
        straggler_(options.straggler),
        injector_(options.injections, options.seed) {}

  // The workers in host.workers() started generation `a` at wall time `gen_wall_start_ns`:
  // forgets the previous generation's ranks, resets the detectors and arms the injections.
  void StartGeneration(const Assignment& a, int64_t gen_wall_start_ns, int64_t now);
  // One step event. Events of other processes (a previous generation) are ignored.
  void Handle(const wire::ParsedEvent& e, int64_t now);
  // Time-triggered injections, `run_s` seconds after titan run started.
  void InjectByTime(double run_s, int64_t now);
  // Stops or continues the slowed workers whose duty cycle says so.
  void DriveSlow(int64_t now);
  // Ends every slow injection's duty cycle (the workers are being stopped).
  void ForgetSlow();
  // How long the loop may sleep: its tick, or less when a slowed worker is due a toggle.
  int64_t NextWakeNs(int64_t now) const;

  bool IsLocal(int rank) const { return ranks_.count(rank) > 0; }
  // The state of local rank `rank` (created empty if unknown).
  RankState& rank(int rank) { return ranks_[rank]; }
  const std::map<int, RankState>& ranks() const { return ranks_; }
  HangDetector& hang() { return hang_; }
  StragglerDetector& straggler() { return straggler_; }

 private:
  void Apply(const Injector::Action& act, int64_t now);
  void StopSlow(int rank);
  const Worker* WorkerByRank(int rank);
  int RankOfPid(int32_t pid);

  const RunOptions& o_;
  MonitorHost& host_;
  RunLog& log_;
  GoodputLedger& ledger_;
  StepWindow& steps_;
  HangDetector hang_;
  StragglerDetector straggler_;
  Injector injector_;
  std::map<int, RankState> ranks_;
  int lead_rank_ = 0;  // the node's first rank: its steps and checkpoints are the ledger's
  int64_t gen_wall_start_ns_ = 0;
  int64_t checkpoint_begin_ns_ = 0;
  int64_t staged_ns_ = 0;  // when the lead rank's async save returned (0: none in flight)
};

}  // namespace titan::supervisor
