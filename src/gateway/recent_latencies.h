// RecentLatencies: the distribution of one latency over the last `window` seconds, for rules
// that judge a replica by its own recent behaviour (the stall watch, the hedge delay). A window
// in time, not in samples: a count of samples covers a second at high load and misses a pause
// that comes every few seconds (a long prompt's prefill), which is exactly what the replica's
// normal behaviour must include.
//
// Log-spaced buckets, 4 per doubling (each about 19% wide), from 16 us up to about 4.5 minutes;
// one set of counts per second of the window and their running sum, so Add is O(1), a quantile
// is O(buckets) and memory is (window + 1) x kBuckets counters (about 12 KB for 60 s). Quantiles
// are the upper edge of their bucket: at most 19% high, never low.
//
// Thread safety: none.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace titan::gateway {

class RecentLatencies {
 public:
  static constexpr int kBuckets = 96;
  static constexpr int64_t kSmallestNs = 16'000;

  explicit RecentLatencies(int window_seconds = 60);

  // A sample of `value_ns` (>= 0) at monotonic `now_ns` (not decreasing between calls).
  void Add(int64_t value_ns, int64_t now_ns);
  // Samples within the window as of `now_ns`.
  uint64_t Count(int64_t now_ns);
  // The q-quantile (0 < q < 1) of the window as of `now_ns`; -1 with fewer than `min_count`
  // samples.
  int64_t Quantile(double q, int64_t now_ns, uint64_t min_count = 1);

  static int BucketOf(int64_t value_ns);
  static int64_t UpperEdgeNs(int bucket);

 private:
  struct Slot {
    int64_t second = -1;
    std::array<uint16_t, kBuckets> counts{};
  };
  // Drops the seconds that fell out of the window as of `now_ns`.
  void Expire(int64_t now_ns);

  std::vector<Slot> slots_;
  std::array<uint64_t, kBuckets> total_{};
  uint64_t count_ = 0;
};

}  // namespace titan::gateway
