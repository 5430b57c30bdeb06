#include "src/base/rate_limiter.h"

#include <algorithm>
#include <numeric>

#include "src/base/backoff.h"
#include "src/base/clock.h"

namespace titan {

RateLimiter::RateLimiter(double per_second, int burst)
    : per_second_(per_second),
      burst_(std::max(burst, 1)),
      tokens_(std::max(burst, 1)),
      updated_ns_(MonoNowNs()) {}

bool RateLimiter::Acquire(int64_t deadline_mono_ns, const std::atomic<bool>* stop) {
  if (per_second_ <= 0) return true;
  int64_t wait_ns = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t now_ns = MonoNowNs();
    tokens_ = std::min<double>(burst_, tokens_ + (now_ns - updated_ns_) * per_second_ / 1e9);
    updated_ns_ = now_ns;
    if (tokens_ < 1) {
      wait_ns = static_cast<int64_t>((1 - tokens_) / per_second_ * 1e9);
      if (now_ns + wait_ns > deadline_mono_ns) return false;
    }
    tokens_ -= 1;  // taken now, or reserved for when the wait ends
  }
  if (wait_ns == 0) return true;
  waited_ns_.fetch_add(wait_ns, std::memory_order_relaxed);
  if (SleepUnlessStopped(wait_ns, stop)) return true;
  std::lock_guard<std::mutex> lock(mu_);
  tokens_ += 1;  // stopped: give the reservation back
  return false;
}

RetryBudget::RetryBudget(double ratio, double min_per_second, int64_t window_ns)
    : ratio_(ratio),
      min_per_second_(min_per_second),
      window_ns_(std::max<int64_t>(window_ns, kSlots)),
      slot_start_ns_(MonoNowNs()) {}

void RetryBudget::Advance(int64_t now_ns) {
  const int64_t slot_ns = window_ns_ / static_cast<int64_t>(kSlots);
  int64_t passed = (now_ns - slot_start_ns_) / slot_ns;
  if (passed <= 0) return;
  for (int64_t i = 0; i < std::min<int64_t>(passed, kSlots); ++i) {
    slot_ = (slot_ + 1) % kSlots;
    requests_[slot_] = 0;
    retries_[slot_] = 0;
  }
  slot_start_ns_ += passed * slot_ns;
}

void RetryBudget::OnRequest() {
  std::lock_guard<std::mutex> lock(mu_);
  Advance(MonoNowNs());
  ++requests_[slot_];
}

bool RetryBudget::TryRetry() {
  std::lock_guard<std::mutex> lock(mu_);
  Advance(MonoNowNs());
  double requests = static_cast<double>(std::accumulate(requests_.begin(), requests_.end(), 0ull));
  double retries = static_cast<double>(std::accumulate(retries_.begin(), retries_.end(), 0ull));
  double allowed = ratio_ * requests + min_per_second_ * static_cast<double>(window_ns_) / 1e9;
  if (retries + 1 > allowed) return false;
  ++retries_[slot_];
  return true;
}

}  // namespace titan
