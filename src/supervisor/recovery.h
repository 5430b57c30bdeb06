// Recovery: titan run's decisions once a failure is detected, and what follows from them. A
// local failure (crash, hang, persistent straggler) asks the job to restart (claiming it in the
// store: the node that claims first saw the cause, the others follow), stops the workers, and
// counts the failure against this node (FailureTracker): a node with too many is excluded for a
// cool-down and, with --on-isolate, taken out through the scheduler (IsolationRunner, in the
// background; outcomes come back as "isolate" events). Also: following another node's restart,
// lost nodes (expired leases), and leaving the job when Slurm says this node is lost.
//
// Ownership: owns the failure tracker, the isolation runner and the exclusion deadline; holds
// references to the options, log, ledger and rendezvous (owned by the Supervisor, outliving it)
// and a callback that stops this node's workers (the monitor's). Times: `now` and the returned
// deadlines are CLOCK_MONOTONIC ns. Thread safety: not thread-safe; the loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/cluster/isolation.h"
#include "src/cluster/slurm.h"
#include "src/supervisor/failure_policy.h"
#include "src/supervisor/ledger.h"
#include "src/supervisor/policy.h"
#include "src/supervisor/rendezvous.h"
#include "src/supervisor/run_log.h"
#include "src/supervisor/supervisor.h"

namespace titan::supervisor {

// How one generation's monitoring ended. kSucceededLocally: every local worker exited 0 but the
// other nodes' completion could not be confirmed (the store unreachable, or a stop signal while
// waiting). kRestart: the workers are stopped and the job restarts (or this node sits out).
// kFatal: this node leaves the job with exit code 1.
enum class Outcome { kSucceeded, kSucceededLocally, kRestart, kPreempted, kFatal };

class Recovery {
 public:
  // What a failure's diagnosis gives (MonitorHost::DiagnoseFailure).
  using Diagnoser =
      std::function<FailureFacts(const std::string& kind, int64_t step, nlohmann::json* incident)>;

  // `budget` (the supervisor's, outliving this) only names the decisions: "restart" while it
  // has a restart left, "stop" once spent (the supervisor then gives up).
  Recovery(const RunOptions& options, RunLog& log, GoodputLedger& ledger, Rendezvous& rdzv,
           const RestartBudget& budget, std::function<void()> stop_workers,
           Diagnoser diagnose = nullptr);

  // A failure of `kind` ("crash", "hang", "straggler") seen here in generation `a`, which
  // happened at `failure_ns`: claims the restart, stops the workers, diagnoses what they left
  // (a "diagnosis" event) and decides once (one "decision" event; failure_policy.h): restart
  // (kRestart), stop for a failure a restart repeats (kFatal), or exclude this node for a
  // hardware fault. When claimed and `count_failure`, counts it against this node (maybe
  // excluding it). `evidence` may carry the failing rank's "step".
  Outcome Fail(const Assignment& a, const std::string& kind, const std::string& detail,
               int64_t failure_ns, const nlohmann::json& evidence, int64_t now,
               bool count_failure = true);
  // The last failure's diagnosis (IncidentJson; null if none) and decision, for the verdict.
  const nlohmann::json& last_diagnosis() const { return last_diagnosis_; }
  const std::string& last_decision() const { return last_decision_; }
  // Another node restarted the job (its generation record); stops the workers. Returns
  // kRestart. `local_evidence`: this node's own failure, seen as a consequence.
  Outcome Follow(const nlohmann::json& record, int64_t now,
                 const nlohmann::json* local_evidence = nullptr);
  // Members of `a` lost their leases: claims the restart (the claimer isolates their hosts),
  // stops the workers. Returns kRestart.
  Outcome LostNodes(const Assignment& a, const std::vector<std::string>& lost, int64_t now);
  // Slurm says this node is down: stops the workers and leaves the job as a lost node does, so
  // that the others restart without it. Returns kFatal.
  Outcome LeaveLostNode(const cluster::SlurmNodeState& state, int64_t now);
  // Local rank `rank` is a persistent straggler and --straggler-action=exclude: excludes this
  // node, isolates it and restarts without counting a failure. Returns kRestart.
  Outcome ExcludeStraggler(const Assignment& a, int rank, const std::string& detail, int64_t now);

  // Logs the isolation actions that finished (and counts them in the ledger).
  void ReportIsolations();
  // Waits up to `timeout_ns` for the isolation actions in flight; false if some still run.
  bool WaitIsolations(int64_t timeout_ns) { return isolation_.WaitIdle(timeout_ns); }

  // This node sits out of rendezvous until then (0: not excluded).
  int64_t excluded_until_ns() const { return excluded_until_ns_; }
  // When the last failure was detected (0: none since clear_detect_ns()).
  int64_t detect_ns() const { return detect_ns_; }
  void clear_detect_ns() { detect_ns_ = 0; }

 private:
  // Takes `host` (a scheduler node name) out through the --on-isolate actions, in the
  // background.
  void Isolate(const std::string& host, int rank, const std::string& reason);

  // The action a failure's decision names: "restart" while the budget has one left, else
  // "stop" (logging "restart" before the give-up read as if the job would restart).
  const char* RestartOrStop() const { return budget_.Exhausted() ? "stop" : "restart"; }

  const RunOptions& o_;
  RunLog& log_;
  GoodputLedger& ledger_;
  Rendezvous& rdzv_;
  const RestartBudget& budget_;
  std::function<void()> stop_workers_;
  Diagnoser diagnose_;
  std::vector<FailureFacts> history_;  // this job's failures, oldest first
  int64_t last_isolation_ns_ = 0;
  nlohmann::json last_diagnosis_;
  std::string last_decision_;
  FailureTracker failures_;
  cluster::IsolationRunner isolation_;
  int64_t excluded_until_ns_ = 0;
  int64_t detect_ns_ = 0;
};

}  // namespace titan::supervisor
