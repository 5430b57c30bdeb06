#include "src/detect/sorted_window.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "src/base/check.h"

namespace titan::detect {

SortedWindow::SortedWindow(int64_t capacity)
    : capacity_(capacity),
      ring_(new double[static_cast<size_t>(capacity)]),
      sorted_(new double[static_cast<size_t>(capacity)]) {
  TITAN_CHECK(capacity >= 3 && capacity <= kMaxCapacity) << "window " << capacity;
}

void SortedWindow::Add(double value) {
  double* const begin = sorted_.get();
  if (count_ < capacity_) {
    double* at = std::upper_bound(begin, begin + count_, value);
    std::memmove(at + 1, at, static_cast<size_t>(begin + count_ - at) * sizeof(double));
    *at = value;
    ring_[(pos_ + count_) % capacity_] = value;
    ++count_;
    return;
  }
  // Full: evict the oldest and insert the new value with a single shift of the values between.
  const double old = ring_[pos_];
  ring_[pos_] = value;
  pos_ = pos_ + 1 == capacity_ ? 0 : pos_ + 1;
  double* const end = begin + count_;
  double* evict = std::lower_bound(begin, end, old);
  double* insert = std::lower_bound(begin, end, value);
  if (insert > evict) {
    // Values in (evict, insert) move one slot left; the new value lands just before `insert`.
    std::memmove(evict, evict + 1, static_cast<size_t>(insert - evict - 1) * sizeof(double));
    *(insert - 1) = value;
  } else {
    // Values in [insert, evict) move one slot right.
    std::memmove(insert + 1, insert, static_cast<size_t>(evict - insert) * sizeof(double));
    *insert = value;
  }
}

double SortedWindow::Median() const {
  const int64_t half = count_ / 2;
  return count_ % 2 == 1 ? sorted_[half] : 0.5 * (sorted_[half - 1] + sorted_[half]);
}

double SortedWindow::KthDeviation(double median, int64_t split, int64_t k) const {
  // Left deviations L_i = median - sorted[split-1-i] (i < a), right R_j = sorted[split+j] - median
  // (j < b); both ascending. Binary search on how many of the k+1 smallest come from the left.
  const int64_t a = split;
  const int64_t b = count_ - split;
  auto left = [&](int64_t i) { return median - sorted_[split - 1 - i]; };
  auto right = [&](int64_t j) { return sorted_[split + j] - median; };
  int64_t lo = std::max<int64_t>(0, k + 1 - b);
  int64_t hi = std::min<int64_t>(k + 1, a);
  while (lo <= hi) {
    const int64_t i = lo + (hi - lo) / 2;
    const int64_t j = k + 1 - i;
    if (i < a && j > 0 && right(j - 1) > left(i)) {
      lo = i + 1;
    } else if (i > 0 && j < b && left(i - 1) > right(j)) {
      hi = i - 1;
    } else {
      const double from_left = i > 0 ? left(i - 1) : -std::numeric_limits<double>::infinity();
      const double from_right = j > 0 ? right(j - 1) : -std::numeric_limits<double>::infinity();
      return std::max(from_left, from_right);
    }
  }
  TITAN_CHECK(false) << "k-th deviation search failed: k=" << k << " count=" << count_;
  return 0;
}

double SortedWindow::Mad(double median) const {
  const double* begin = sorted_.get();
  const int64_t split = std::lower_bound(begin, begin + count_, median) - begin;
  const int64_t half = count_ / 2;
  if (count_ % 2 == 1) return KthDeviation(median, split, half);
  return 0.5 * (KthDeviation(median, split, half - 1) + KthDeviation(median, split, half));
}

void SortedWindow::Estimate(double* baseline, double* scale) const {
  *baseline = Median();
  *scale = kMadToSigma * Mad(*baseline);
}

}  // namespace titan::detect
