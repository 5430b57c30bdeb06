// SortedWindow: the last `capacity` samples kept both in arrival order (a ring) and sorted, for
// a rolling median and MAD (median absolute deviation from the median).
//
// Cost per Add: two binary searches plus one memmove of the samples between the evicted and the
// inserted value (at most capacity - 1 doubles; capacity is limited to kMaxCapacity so this
// stays a few hundred nanoseconds at worst and ~20 ns at the default 64). Median: O(1).
// MAD: O(log capacity): the k values nearest the median form a contiguous run of the sorted
// array, found by binary search. No allocation after construction.
// Thread safety: none.
#pragma once

#include <cstdint>
#include <memory>

namespace titan::detect {

class SortedWindow {
 public:
  static constexpr int64_t kMaxCapacity = 4096;
  // Scale factor making the MAD a consistent estimator of a Gaussian's sigma.
  static constexpr double kMadToSigma = 1.4826;

  explicit SortedWindow(int64_t capacity);  // 3 <= capacity <= kMaxCapacity

  int64_t size() const { return count_; }
  void Add(double value);
  void Clear() { count_ = pos_ = 0; }

  // Precondition for both: size() > 0.
  double Median() const;
  double Mad(double median) const;
  // Baseline = median, scale = kMadToSigma * MAD.
  void Estimate(double* baseline, double* scale) const;

 private:
  // k-th (0-based) smallest absolute deviation from `median`; k < size().
  double KthDeviation(double median, int64_t k) const;
  // The k-th deviation given the number of runs sorted[i .. i+k] whose two ends sum below
  // 2 * median (see KthDeviation).
  double DeviationAtCrossing(double median, int64_t k, int64_t crossing) const;

  int64_t capacity_;
  std::unique_ptr<double[]> ring_;
  std::unique_ptr<double[]> sorted_;
  int64_t pos_ = 0;  // next ring slot to write; the oldest sample when full
  int64_t count_ = 0;
};

}  // namespace titan::detect
