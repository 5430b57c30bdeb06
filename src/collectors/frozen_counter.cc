#include "src/collectors/frozen_counter.h"

namespace titan {

FrozenCounter::Change FrozenCounter::Update(int64_t now_ns, double value, bool active) {
  const bool same = have_value_ && value == value_;
  have_value_ = true;
  value_ = value;
  if (!same) {
    timing_ = active;
    since_ns_ = now_ns;
    if (reported_) {
      reported_ = false;
      return Change::kMovedAgain;
    }
    return Change::kNone;
  }
  if (!active) {
    timing_ = false;
    return Change::kNone;
  }
  if (!timing_) {
    timing_ = true;
    since_ns_ = now_ns;
  }
  if (!reported_ && now_ns - since_ns_ >= frozen_after_ns_) {
    reported_ = true;
    return Change::kFroze;
  }
  return Change::kNone;
}

}  // namespace titan
