// FrozenCounter: notices a counter that must advance but has stopped, the mark of a source whose
// readings went stale while its calls still succeed (a GPU driver that keeps returning the
// energy counter of minutes ago after an XID error). A GPU drawing power always adds energy
// (at 1 W, one millijoule per millisecond), so an unchanged energy counter over seconds while
// the power reading is above zero means the readings are stale, not that the GPU rests.
// Thread safety: none; one per watched counter, used by its collector's thread.
#pragma once

#include <cstdint>

namespace titan {

class FrozenCounter {
 public:
  enum class Change { kNone, kFroze, kMovedAgain };

  explicit FrozenCounter(int64_t frozen_after_ns) : frozen_after_ns_(frozen_after_ns) {}

  // One reading at `now_ns` (monotonic or wall, but one clock). `active`: the source should be
  // advancing the counter now (e.g. power > 0). Returns kFroze once when the value has stayed
  // the same for frozen_after_ns of active readings, kMovedAgain once when it changes after
  // that, else kNone. Inactive readings restart the wait.
  Change Update(int64_t now_ns, double value, bool active);

  bool frozen() const { return reported_; }
  // How long the value has been unchanged while active (0 if it is moving).
  int64_t frozen_for_ns(int64_t now_ns) const { return timing_ ? now_ns - since_ns_ : 0; }

 private:
  int64_t frozen_after_ns_;
  bool have_value_ = false;
  double value_ = 0;
  bool timing_ = false;   // the current value has been read while active
  int64_t since_ns_ = 0;  // its first active reading (valid while timing_)
  bool reported_ = false;
};

}  // namespace titan
