#include "src/gateway/hedge_budget.h"

#include <algorithm>

#include "src/base/clock.h"

namespace titan::gateway {

HedgeBudget::HedgeBudget(double fraction, int64_t window_ns)
    : fraction_(std::clamp(fraction, 0.0, 1.0)),
      slots_(static_cast<size_t>(std::max<int64_t>(1, window_ns / kNsPerSecond))) {}

void HedgeBudget::Roll(int64_t now_ns) {
  const int64_t second = now_ns / kNsPerSecond;
  const int64_t size = static_cast<int64_t>(slots_.size());
  double window = 0;
  for (Slot& s : slots_) {
    if (s.second <= second - size) s = Slot{};  // fell out of the window
    window += s.earned;
  }
  balance_ = std::min(balance_, window);
}

void HedgeBudget::Earn(int64_t prompt_tokens, int64_t now_ns) {
  if (prompt_tokens <= 0) return;
  const double earned = fraction_ * static_cast<double>(prompt_tokens);
  const int64_t second = now_ns / kNsPerSecond;
  Slot& slot = slots_[static_cast<size_t>(second % static_cast<int64_t>(slots_.size()))];
  if (slot.second != second) slot = Slot{second, 0};
  slot.earned += earned;
  balance_ += earned;
  earned_total_ += earned;
  Roll(now_ns);
}

bool HedgeBudget::CanSpend(int64_t prompt_tokens, int64_t now_ns) {
  Roll(now_ns);
  return prompt_tokens > 0 && balance_ >= static_cast<double>(prompt_tokens);
}

bool HedgeBudget::TrySpend(int64_t prompt_tokens, int64_t now_ns) {
  if (!CanSpend(prompt_tokens, now_ns)) return false;
  balance_ -= static_cast<double>(prompt_tokens);
  spent_total_ += prompt_tokens;
  return true;
}

}  // namespace titan::gateway
