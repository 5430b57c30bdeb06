// How many requests a client may send: a token bucket for control planes (Kubernetes, etcd,
// S3 listings and metadata), a retry budget for data planes (checkpoint transfers).
//
// A control plane is shared by every node of a job; a loop that lists or polls without a bound
// (a server that always answers "more", a watch that always ends at once) turns a thousand
// clients into a storm. A RateLimiter caps the request rate of one client, as client-go's
// default token bucket does (5 requests/s, bursts of 10).
//
// A data plane's requests are the work itself and must not be slowed, but retrying them
// without a bound multiplies the load on a store that is already failing. A RetryBudget lets
// retries add at most `ratio` of the requests of the last `window_ns`, plus `min_per_second`
// (Finagle's RetryBudget): a blip is retried in full, a store that fails everything gets a
// bounded extra load and the callers get its error.
//
// Thread safety: both classes are thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>

namespace titan {

class RateLimiter {
 public:
  // `per_second` <= 0: unlimited. `burst` >= 1 requests may go at once after a quiet period.
  RateLimiter(double per_second, int burst);

  // Takes one token, sleeping until one is available. False, without a token, when the wait
  // would end after `deadline_mono_ns`, or when `stop` (may be null) is set while waiting.
  bool Acquire(int64_t deadline_mono_ns = std::numeric_limits<int64_t>::max(),
               const std::atomic<bool>* stop = nullptr);

  double per_second() const { return per_second_; }
  int burst() const { return burst_; }
  // Total time callers spent waiting for tokens (ns), for logs and tests.
  int64_t waited_ns() const { return waited_ns_.load(std::memory_order_relaxed); }

 private:
  const double per_second_;
  const int burst_;
  std::mutex mu_;
  double tokens_;       // guarded by mu_; negative: tokens reserved by waiting callers
  int64_t updated_ns_;  // guarded by mu_
  std::atomic<int64_t> waited_ns_{0};
};

class RetryBudget {
 public:
  RetryBudget(double ratio = 0.2, double min_per_second = 10, int64_t window_ns = 10'000'000'000);

  // A first attempt was made (deposits `ratio` of a retry).
  void OnRequest();
  // Takes one retry from the budget; false when it is spent (the caller fails instead).
  bool TryRetry();

 private:
  static constexpr size_t kSlots = 10;  // the window in slots of window_ns / kSlots
  void Advance(int64_t now_ns);         // mu_ held

  const double ratio_;
  const double min_per_second_;
  const int64_t window_ns_;
  std::mutex mu_;
  std::array<uint64_t, kSlots> requests_{};  // guarded by mu_
  std::array<uint64_t, kSlots> retries_{};   // guarded by mu_
  int64_t slot_start_ns_ = 0;                // guarded by mu_: start of the current slot
  size_t slot_ = 0;                          // guarded by mu_
};

}  // namespace titan
