// HedgeBudget: the prompt tokens that hedged and rescued requests of one priority class may
// cost. Each admitted request earns `fraction` x its prompt tokens into the account; a hedge or
// a rescue spends its request's prompt tokens (a duplicate costs at least a prefill) and is sent
// only when the account holds them, so over any stretch a class's hedged prompt tokens stay
// within `fraction` of its offered prompt tokens. The account never holds more than the class
// earned over the last `window` (one-second slots): an idle hour cannot bank a storm of hedges.
// Retries (a request that failed before its first byte, sent again elsewhere) do not draw on it:
// they replace a failed attempt instead of duplicating a live one, and `retries` bounds them.
//
// Free of I/O and clocks (times are given); thread safety: none.
#pragma once

#include <cstdint>
#include <vector>

namespace titan::gateway {

class HedgeBudget {
 public:
  // fraction in [0, 1]; window >= 1 s.
  HedgeBudget(double fraction, int64_t window_ns);

  void Earn(int64_t prompt_tokens, int64_t now_ns);
  // Whether the account holds `prompt_tokens` now.
  bool CanSpend(int64_t prompt_tokens, int64_t now_ns);
  // Spends `prompt_tokens` when the account holds them; false (nothing spent) otherwise.
  bool TrySpend(int64_t prompt_tokens, int64_t now_ns);

  double balance() const { return balance_; }
  double earned_total() const { return earned_total_; }
  int64_t spent_total() const { return spent_total_; }

 private:
  struct Slot {
    int64_t second = -1;
    double earned = 0;
  };
  // Moves the slots to `now_ns` and caps the balance at what they hold.
  void Roll(int64_t now_ns);

  double fraction_;
  std::vector<Slot> slots_;  // one per second of the window, indexed by second % size
  double balance_ = 0, earned_total_ = 0;
  int64_t spent_total_ = 0;
};

}  // namespace titan::gateway
