#include "src/gateway/recent_latencies.h"

#include <algorithm>
#include <cmath>

#include "src/base/clock.h"

namespace titan::gateway {

RecentLatencies::RecentLatencies(int window_seconds)
    : slots_(static_cast<size_t>(std::max(1, window_seconds))) {}

int RecentLatencies::BucketOf(int64_t value_ns) {
  if (value_ns <= kSmallestNs) return 0;
  const double b = std::ceil(4 * std::log2(static_cast<double>(value_ns) / kSmallestNs));
  return static_cast<int>(std::min<double>(b, kBuckets - 1));
}

int64_t RecentLatencies::UpperEdgeNs(int bucket) {
  return static_cast<int64_t>(static_cast<double>(kSmallestNs) * std::exp2(bucket / 4.0));
}

void RecentLatencies::Expire(int64_t now_ns) {
  const int64_t second = now_ns / kNsPerSecond;
  const int64_t size = static_cast<int64_t>(slots_.size());
  for (Slot& s : slots_) {
    if (s.second < 0 || s.second > second - size) continue;
    for (int b = 0; b < kBuckets; ++b) {
      total_[b] -= s.counts[b];
      count_ -= s.counts[b];
    }
    s = Slot{};
  }
}

void RecentLatencies::Add(int64_t value_ns, int64_t now_ns) {
  Expire(now_ns);
  const int64_t second = now_ns / kNsPerSecond;
  Slot& slot = slots_[static_cast<size_t>(second % static_cast<int64_t>(slots_.size()))];
  if (slot.second != second) {
    for (int b = 0; b < kBuckets; ++b) {  // a slot of a second long gone (Expire missed none)
      total_[b] -= slot.counts[b];
      count_ -= slot.counts[b];
    }
    slot = Slot{second, {}};
  }
  const int b = BucketOf(std::max<int64_t>(0, value_ns));
  if (slot.counts[b] == UINT16_MAX) return;  // 65,535 of one bucket in one second: enough
  ++slot.counts[b];
  ++total_[b];
  ++count_;
}

uint64_t RecentLatencies::Count(int64_t now_ns) {
  Expire(now_ns);
  return count_;
}

int64_t RecentLatencies::Quantile(double q, int64_t now_ns, uint64_t min_count) {
  Expire(now_ns);
  if (count_ == 0 || count_ < min_count) return -1;
  // The smallest bucket at or past which the rank falls (nearest rank).
  const uint64_t rank =
      std::min<uint64_t>(count_, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += total_[b];
    if (seen >= std::max<uint64_t>(1, rank)) return UpperEdgeNs(b);
  }
  return UpperEdgeNs(kBuckets - 1);
}

}  // namespace titan::gateway
