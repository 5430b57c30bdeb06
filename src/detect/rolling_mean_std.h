// RollingMeanStd: mean and sample standard deviation of the last `capacity` samples, O(1) per
// sample, no allocation after construction. Sliding Welford updates; to bound floating-point
// drift the sums are recomputed exactly (two passes over the ring) once every `capacity`
// replacements, which keeps the amortised cost O(1). A constant signal gives exactly std 0.
// Thread safety: none.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>

namespace titan::detect {

class RollingMeanStd {
 public:
  explicit RollingMeanStd(int64_t capacity);  // capacity >= 2

  int64_t size() const { return count_; }
  int64_t capacity() const { return capacity_; }
  double mean() const { return mean_; }
  double stddev() const { return count_ > 1 ? std::sqrt(m2_ / double(count_ - 1)) : 0.0; }
  void Estimate(double* baseline, double* scale) const {
    *baseline = mean_;
    *scale = stddev();
  }

  void Add(double value) {
    if (count_ < capacity_) {
      ring_[pos_] = value;
      Advance();
      ++count_;
      const double delta = value - mean_;
      mean_ += delta / double(count_);
      m2_ += delta * (value - mean_);
      return;
    }
    const double old = ring_[pos_];
    ring_[pos_] = value;
    Advance();
    const double new_mean = mean_ + (value - old) * inv_capacity_;
    m2_ += (value - old) * ((value - new_mean) + (old - mean_));
    mean_ = new_mean;
    if (m2_ < 0) m2_ = 0;
    if (++replaced_ >= capacity_) Recompute();
  }

  void Clear() {
    count_ = pos_ = replaced_ = 0;
    mean_ = m2_ = 0;
  }

 private:
  void Advance() { pos_ = pos_ + 1 == capacity_ ? 0 : pos_ + 1; }
  void Recompute();

  int64_t capacity_;
  double inv_capacity_;
  std::unique_ptr<double[]> ring_;
  int64_t pos_ = 0;  // next slot to write; the oldest sample when full
  int64_t count_ = 0;
  int64_t replaced_ = 0;
  double mean_ = 0;
  double m2_ = 0;  // sum of squared deviations from mean_
};

}  // namespace titan::detect
