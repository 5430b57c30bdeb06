// GoodputCategory: where a training job's wall-clock time went. One vocabulary for titan run's
// measured ledger (src/supervisor/ledger.h) and titan sim's projection (src/sim/ledger.h), so a
// projection compares line by line with a real run (same names in JSON, CSV and metrics).
//
//   productive   stepping whose work was kept
//   checkpoint   blocked in checkpoint saves
//   lost_work    work done after the last checkpoint and thrown away by a failure
//   detection    from a failure to its detection (a crash: ~0; a hang: the silent time)
//   restart      from detection to the new workers started (titan sim: through the checkpoint
//                load, as sim has no separate start-up)
//   startup      from the workers' exec to their first step (titan run only; always 0 in sim)
//   waiting      for nodes: at a rendezvous (titan run), for repairs or spares (titan sim)
//   degraded     running shrunk with fewer replicas, as a share of full-size time (titan sim
//                only; always 0 in titan run)
// The categories add up to the wall time. docs/run.md and docs/sim.md refer here.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace titan {

enum class GoodputCategory : uint8_t {
  kProductive = 0,
  kCheckpoint,
  kLostWork,
  kDetection,
  kRestart,
  kStartup,
  kWaiting,
  kDegraded,
};
inline constexpr size_t kGoodputCategoryCount = 8;

inline constexpr std::array<const char*, kGoodputCategoryCount> kGoodputCategoryNames = {
    "productive", "checkpoint", "lost_work", "detection",
    "restart",    "startup",    "waiting",   "degraded"};

constexpr const char* GoodputCategoryName(GoodputCategory category) {
  return kGoodputCategoryNames[static_cast<size_t>(category)];
}
constexpr GoodputCategory GoodputCategoryAt(size_t i) { return static_cast<GoodputCategory>(i); }

}  // namespace titan
