// Isolation actions: what `titan run --on-isolate` does when it takes a node out of a job (it
// failed too often, straggled persistently, or was lost), so that the scheduler hears of it and
// the next job does not land there.
//
//   slurm-drain   scontrol update NodeName={node} State=DRAIN Reason="titan: {reason}"
//   k8s-cordon    titan k8s cordon {node} --reason {reason}  (cordon + titan.io/unhealthy taint)
//   exec:CMD      CMD run by /bin/sh -c, with {node} {rank} {reason} {job} replaced by
//                 shell-quoted values (any other text without a known name is taken as CMD)
//
// Each action runs bounded in time on a background thread, in the order given; its outcome
// (command, exit, output, time) is reported back to the caller. A failing, hanging or missing
// action never stops recovery: it is an outcome like any other. Dry run: outcomes say what
// would have run; nothing runs.
//
// Thread safety: IsolationRunner's methods may be called from any one thread (the supervisor's
// loop); it owns one worker thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/base/status.h"

namespace titan::cluster {

// What to isolate and why. `node` is the scheduler's name of the node (Slurm's NodeName,
// Kubernetes' node name); rank -1 when no one rank is to blame (a lost node).
struct IsolationTarget {
  std::string node;
  int rank = -1;
  std::string reason;
  std::string job;
};

struct IsolationAction {
  std::string name;  // slurm-drain | k8s-cordon | exec
  std::string spec;  // as given
  // Argument templates with {placeholders}; for exec {"/bin/sh", "-c", CMD} with CMD's
  // placeholders shell-quoted when expanded.
  std::vector<std::string> argv;
};

// `titan_binary`: the titan executable that k8s-cordon runs. INVALID_ARGUMENT for an empty spec
// or a placeholder other than {node} {rank} {reason} {job} (naming it).
Result<IsolationAction> ParseIsolationAction(std::string_view spec,
                                             const std::string& titan_binary);

// The command line of `action` for `target`.
std::vector<std::string> ExpandIsolationAction(const IsolationAction& action,
                                               const IsolationTarget& target);

// One action's outcome for one target.
struct IsolationOutcome {
  IsolationTarget target;
  std::string action;                // its name
  std::vector<std::string> command;  // what ran (or would have run)
  bool dry_run = false;
  bool ok = false;
  std::string result;  // "exit code 0", "timed out after 30.0 s (killed)", "dry run", ...
  std::string output;  // the command's output, at most 2 KiB
  int64_t elapsed_ns = 0;
};

struct IsolationRunnerOptions {
  std::vector<IsolationAction> actions;
  int64_t timeout_ns = 30'000'000'000;  // per action
  bool dry_run = false;
  size_t max_pending = 64;  // targets waiting; past it a target's outcomes say "dropped"
};

class IsolationRunner {
 public:
  explicit IsolationRunner(IsolationRunnerOptions options);
  ~IsolationRunner();  // waits for the action in progress (bounded by its timeout)
  IsolationRunner(const IsolationRunner&) = delete;
  IsolationRunner& operator=(const IsolationRunner&) = delete;

  bool enabled() const { return !options_.actions.empty(); }
  // Queues every action for `target`; returns at once.
  void Submit(IsolationTarget target);
  // Outcomes finished since the last call, in order.
  std::vector<IsolationOutcome> TakeFinished();
  // Blocks until nothing is queued or running, or timeout_ns passed; true if idle.
  bool WaitIdle(int64_t timeout_ns);

 private:
  void Loop();
  IsolationOutcome RunOne(const IsolationAction& action, const IsolationTarget& target) const;

  const IsolationRunnerOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<IsolationTarget> pending_;
  std::vector<IsolationOutcome> finished_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace titan::cluster
