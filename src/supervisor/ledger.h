// GoodputLedger: splits the wall time of a job into where it went.
//
//   productive   stepping (including data loading between steps) whose work was kept
//   checkpoint   blocked in checkpoint saves (checkpoint_begin .. checkpoint_end)
//   lost_work    work done after the last completed checkpoint and thrown away by a failure
//   detection    from the failure to its detection (a crash: ~0; a hang: the silent time)
//   restart      from detection to the new workers exec'd (titan's own overhead + backoff)
//   startup      from exec to the first step (interpreter, imports, checkpoint load, rendezvous
//                inside the framework)
//   waiting      waiting for nodes at a rendezvous
//   degraded     titan sim's only; always 0 here
// These are titan's one goodput vocabulary (src/base/goodput_category.h), shared with titan sim.
// ETTR (effective training time ratio) = productive / wall.
//
// The supervisor drives it with phase changes and failures; all times are monotonic ns.
// Thread safety: not thread-safe; owned by the supervisor loop (Snapshot() copies are plain).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "src/base/goodput_category.h"
#include "src/metrics/exposition.h"

namespace titan::supervisor {

using Phase = GoodputCategory;
inline constexpr int kPhaseCount = static_cast<int>(kGoodputCategoryCount);
constexpr const char* PhaseName(Phase phase) { return GoodputCategoryName(phase); }

class GoodputLedger {
 public:
  // Starts the clock in `phase`.
  void Start(Phase phase, int64_t now_ns);
  // Closes the current phase at now_ns and opens `phase`.
  void Enter(Phase phase, int64_t now_ns);
  Phase phase() const { return phase_; }
  // A checkpoint completed: productive work so far is safe.
  void OnCheckpointSaved(int64_t step, int64_t now_ns);
  // An asynchronous save of `step` returned (staged): the productive work so far becomes safe
  // when OnCheckpointCommitted(step) follows; work done meanwhile stays unsaved.
  void OnCheckpointStaged(int64_t step, int64_t now_ns);
  // The save of `step` committed. Without a staged save of that step (a synchronous save that
  // reported both), the same as OnCheckpointSaved.
  void OnCheckpointCommitted(int64_t step, int64_t now_ns);
  // `step` was copied to the durable mirror (tiering): shown, not counted as time.
  void OnCheckpointDurable(int64_t step) {
    last_durable_step_ = std::max(last_durable_step_, step);
  }
  void OnStep(int64_t step) {
    ++steps_;
    last_step_ = step;
  }
  // A failure detected at now_ns that happened at failure_ns (<= now_ns). Moves the silent time
  // from productive to detection and the unsaved work to lost; enters kRestart.
  void OnFailure(int64_t failure_ns, int64_t now_ns);
  void OnRestart() { ++restarts_; }
  // An isolation action (titan run --on-isolate) ended: counted by result, not timed (it runs
  // beside recovery, not in its way).
  void OnIsolation(bool ok, bool dry_run) { ++isolations_[dry_run ? 2 : ok ? 0 : 1]; }
  // Closes the ledger.
  void Finish(int64_t now_ns);

  int64_t Seconds(Phase phase) const;             // rounded down
  int64_t Ns(Phase phase, int64_t now_ns) const;  // including the open phase up to now
  int64_t WallNs(int64_t now_ns) const { return now_ns - start_ns_; }
  double Ettr(int64_t now_ns) const;
  int restarts() const { return restarts_; }
  int64_t steps() const { return steps_; }
  int64_t last_checkpoint_step() const { return last_checkpoint_step_; }
  int64_t last_durable_step() const { return last_durable_step_; }

  nlohmann::json ToJson(int64_t now_ns) const;
  // A fixed-width table for humans.
  std::string ToTable(int64_t now_ns) const;
  // Appends the Prometheus families titan_run_goodput_seconds{category=...}, titan_run_ettr,
  // titan_run_restarts, ... to `out`.
  void AppendPrometheus(int64_t now_ns, ExpositionWriter& out) const;

 private:
  void Close(int64_t now_ns);
  std::array<int64_t, kPhaseCount> ns_{};
  Phase phase_ = Phase::kStartup;
  int64_t start_ns_ = 0;
  int64_t phase_start_ns_ = 0;
  int64_t productive_since_checkpoint_ns_ = 0;
  int64_t last_checkpoint_step_ = -1;
  int64_t last_durable_step_ = -1;
  // The staged async save not yet committed: its step and the unsaved productive time it covers.
  int64_t staged_step_ = -1;
  int64_t staged_covers_ns_ = 0;
  int64_t last_step_ = -1;
  int64_t steps_ = 0;
  int restarts_ = 0;
  std::array<int64_t, 3> isolations_{};  // succeeded, failed, dry run
  bool finished_ = false;
  int64_t finish_ns_ = 0;
};

}  // namespace titan::supervisor
