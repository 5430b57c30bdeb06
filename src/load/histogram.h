// LatencyHistogram: an HDR-style log-linear histogram of non-negative int64 values, meant for
// nanosecond latencies (TTFT, inter-token gaps, end-to-end times) recorded by titan load.
//
// Accuracy: values below 1024 are counted exactly. Above, each power-of-two range [2^k, 2^(k+1))
// is split into 512 equal buckets, so a bucket is at most 1/512 of its values wide.
// ValueAtQuantile() returns the middle of the bucket that holds the true order statistic
// (clamped to [min(), max()]), so it is within kMaxRelativeError = 1/1024 (0.098%) of it.
// min(), max(), count() and Mean() are exact.
//
// Range: 0 .. kMaxTrackableNs = 2^43 - 1 ns (about 2 h 26 min). Larger values are counted in the
// top bucket and in clamped(); min(), max() and Mean() still use their true value. Negative
// values (a caller's clock bug) are recorded as 0 and also counted in clamped().
//
// Memory: fixed, kBucketCount = 17920 64-bit counters (140 KiB) allocated once by the
// constructor, plus a few words. (0.1% over 34 octaves needs 512 buckets per octave; 64-bit
// counters so that merged soak tests never wrap.) Record() is O(1) and allocation-free.
//
// Thread safety: not thread-safe. Keep one histogram per thread and Merge() them at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace titan::load {

class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 9;  // 512 buckets per power of two
  static constexpr int64_t kMaxTrackableNs = (int64_t{1} << 43) - 1;
  static constexpr double kMaxRelativeError = 1.0 / 1024;
  static constexpr size_t kBucketCount =
      (size_t{43 - kSubBucketBits} << kSubBucketBits) + (size_t{1} << (kSubBucketBits + 1));

  LatencyHistogram();

  // Adds `count` occurrences of `value_ns` (count 0 is a no-op).
  void Record(int64_t value_ns, uint64_t count = 1);
  // Adds every value recorded in `other`, as if it had been recorded here.
  void Merge(const LatencyHistogram& other);
  // Forgets everything recorded; keeps the memory.
  void Clear();

  uint64_t count() const { return count_; }
  // Values outside [0, kMaxTrackableNs], counted at the nearest edge.
  uint64_t clamped() const { return clamped_; }
  // Exact smallest / largest recorded value; 0 when empty.
  int64_t min() const { return count_ == 0 ? 0 : min_; }
  int64_t max() const { return count_ == 0 ? 0 : max_; }
  // Exact mean (sum / count, the sum kept in 128 bits); 0 when empty.
  double Mean() const;

  // The ceil(q * count())-th smallest value (at least the 1st; q * count() within 1e-9 of an
  // integer counts as that integer, so 0.7 of 10 values is the 7th), within kMaxRelativeError.
  // q is clamped to [0, 1] (NaN is 0); q = 0 gives min() and q = 1 gives max() exactly. A rank
  // among clamped() values gives the top bucket's value. 0 when empty. O(buckets in use).
  int64_t ValueAtQuantile(double q) const;

  // Calls fn(lowest_ns, highest_ns, count) for each non-empty bucket in ascending order; the
  // bucket holds the values lowest_ns..highest_ns (inclusive). For exporters and plots.
  template <typename Fn>
  void ForEachBucket(Fn&& fn) const {
    if (count_ == 0) return;
    for (size_t i = min_index_; i <= max_index_; ++i) {
      if (counts_[i] != 0) fn(LowestOf(i), LowestOf(i) + WidthOf(i) - 1, counts_[i]);
    }
  }

 private:
  static size_t IndexOf(int64_t value);
  static int64_t LowestOf(size_t index);
  static int64_t WidthOf(size_t index);

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t clamped_ = 0;
  int64_t min_ = std::numeric_limits<int64_t>::max();
  int64_t max_ = 0;
  unsigned __int128 sum_ = 0;
  size_t min_index_ = kBucketCount;
  size_t max_index_ = 0;
};

}  // namespace titan::load
