#include "src/load/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace titan::load {
namespace {

constexpr int kB = LatencyHistogram::kSubBucketBits;
constexpr int64_t kLinearLimit = int64_t{1} << (kB + 1);  // values below are their own bucket

}  // namespace

LatencyHistogram::LatencyHistogram() : counts_(kBucketCount, 0) {}

size_t LatencyHistogram::IndexOf(int64_t value) {
  if (value < kLinearLimit) return static_cast<size_t>(value);
  const int msb = 63 - std::countl_zero(static_cast<uint64_t>(value));
  const int shift = msb - kB;
  return (static_cast<size_t>(shift) << kB) + static_cast<size_t>(value >> shift);
}

int64_t LatencyHistogram::LowestOf(size_t index) {
  if (index < static_cast<size_t>(kLinearLimit)) return static_cast<int64_t>(index);
  const int shift = static_cast<int>(index >> kB) - 1;
  const int64_t mantissa = static_cast<int64_t>(index - (static_cast<size_t>(shift) << kB));
  return mantissa << shift;
}

int64_t LatencyHistogram::WidthOf(size_t index) {
  if (index < static_cast<size_t>(kLinearLimit)) return 1;
  return int64_t{1} << (static_cast<int>(index >> kB) - 1);
}

void LatencyHistogram::Record(int64_t value_ns, uint64_t count) {
  if (count == 0) return;
  if (value_ns < 0) {
    value_ns = 0;
    clamped_ += count;
  } else if (value_ns > kMaxTrackableNs) {
    clamped_ += count;
  }
  const size_t index = IndexOf(std::min(value_ns, kMaxTrackableNs));
  counts_[index] += count;
  count_ += count;
  sum_ += static_cast<unsigned __int128>(value_ns) * count;
  min_ = std::min(min_, value_ns);
  max_ = std::max(max_, value_ns);
  min_index_ = std::min(min_index_, index);
  max_index_ = std::max(max_index_, index);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  if (other.count_ == 0) return;
  for (size_t i = other.min_index_; i <= other.max_index_; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  clamped_ += other.clamped_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  min_index_ = std::min(min_index_, other.min_index_);
  max_index_ = std::max(max_index_, other.max_index_);
}

void LatencyHistogram::Clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  clamped_ = 0;
  min_ = std::numeric_limits<int64_t>::max();
  max_ = 0;
  sum_ = 0;
  min_index_ = kBucketCount;
  max_index_ = 0;
}

double LatencyHistogram::Mean() const {
  if (count_ == 0) return 0;
  return static_cast<double>(static_cast<long double>(sum_) / static_cast<long double>(count_));
}

int64_t LatencyHistogram::ValueAtQuantile(double q) const {
  if (count_ == 0) return 0;
  if (!(q > 0)) return min_;  // also NaN
  if (q >= 1) return max_;
  // q * count within rounding of an integer is that integer: 0.7 * 10 is rank 7, not 8.
  const double exact = q * static_cast<double>(count_);
  const double nearest = std::round(exact);
  const double ceiling =
      std::abs(exact - nearest) <= 1e-9 * std::max(1.0, exact) ? nearest : std::ceil(exact);
  uint64_t rank = static_cast<uint64_t>(ceiling);
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = min_index_; i <= max_index_; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(LowestOf(i) + WidthOf(i) / 2, min_, max_);
  }
  return max_;  // unreachable: the counts sum to count_
}

}  // namespace titan::load
