#include "src/detect/sorted_window.h"

#include <algorithm>
#include <cstring>

#include "src/base/check.h"

namespace titan::detect {

SortedWindow::SortedWindow(int64_t capacity)
    : capacity_(capacity),
      ring_(new double[static_cast<size_t>(capacity)]),
      sorted_(new double[static_cast<size_t>(capacity)]) {
  TITAN_CHECK(capacity >= 3 && capacity <= kMaxCapacity) << "window " << capacity;
}

namespace {

// Number of leading indexes i in [0, n) for which `below(i)` holds, for a predicate that is true
// then false (a lower_bound). Small ranges are counted (a loop the compiler vectorises, without a
// chain of dependent loads); larger ones use a binary search with conditional moves instead of
// branches, since mispredicted branches on random-looking samples cost more than the search.
constexpr int64_t kLinearSearchMax = 128;

template <typename Below>
int64_t CountBelow(int64_t n, Below below) {
  if (n <= kLinearSearchMax) {
    // Counted in a double (exact up to 2^53): baseline x86-64 (SSE2) has no 64-bit integer
    // compare to vectorise an integer count with.
    double count = 0;
    for (int64_t i = 0; i < n; ++i) count += below(i) ? 1.0 : 0.0;
    return static_cast<int64_t>(count);
  }
  int64_t base = 0;
  while (n > 1) {
    const int64_t half = n / 2;
    base = below(base + half - 1) ? base + half : base;
    n -= half;
  }
  return base + (below(base) ? 1 : 0);
}

double* LowerBound(double* first, int64_t n, double value) {
  return first + CountBelow(n, [&](int64_t i) { return first[i] < value; });
}

// LowerBound for two values at once: in the counting case one pass serves both (half the loads,
// two independent accumulator chains).
void LowerBounds(double* first, int64_t n, double a, double b, double** at_a, double** at_b) {
  if (n > kLinearSearchMax) {
    *at_a = LowerBound(first, n, a);
    *at_b = LowerBound(first, n, b);
    return;
  }
  double count_a = 0, count_b = 0;
  for (int64_t i = 0; i < n; ++i) {
    count_a += first[i] < a ? 1.0 : 0.0;
    count_b += first[i] < b ? 1.0 : 0.0;
  }
  *at_a = first + static_cast<int64_t>(count_a);
  *at_b = first + static_cast<int64_t>(count_b);
}

}  // namespace

void SortedWindow::Add(double value) {
  double* const begin = sorted_.get();
  if (count_ < capacity_) {
    double* at = LowerBound(begin, count_, value);
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
  double* evict;
  double* insert;
  LowerBounds(begin, count_, old, value, &evict, &insert);
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

// The k+1 values closest to the median are a contiguous run sorted[i .. i+k]; its k-th deviation
// is max(median - sorted[i], sorted[i+k] - median), smallest where the two sides cross: at the
// first i with sorted[i] + sorted[i+k] >= 2 * median (monotone in i), or just before it.
double SortedWindow::KthDeviation(double median, int64_t k) const {
  const double* s = sorted_.get();
  const double twice = 2 * median;
  return DeviationAtCrossing(
      median, k, CountBelow(count_ - k, [&](int64_t i) { return s[i] + s[i + k] < twice; }));
}

double SortedWindow::DeviationAtCrossing(double median, int64_t k, int64_t crossing) const {
  const double* s = sorted_.get();
  const int64_t first = std::min(crossing, count_ - k - 1);
  double best = std::max(median - s[first], s[first + k] - median);
  if (first > 0) best = std::min(best, std::max(median - s[first - 1], s[first - 1 + k] - median));
  return best;
}

double SortedWindow::Mad(double median) const {
  const int64_t half = count_ / 2;
  if (count_ % 2 == 1) return KthDeviation(median, half);
  if (count_ - half + 1 > kLinearSearchMax) {
    return 0.5 * (KthDeviation(median, half - 1) + KthDeviation(median, half));
  }
  // Even count, small window: the crossings for k = half-1 and k = half counted in one pass.
  const double* s = sorted_.get();
  const double twice = 2 * median;
  const int64_t k = half;
  double below_lo = 0, below_hi = 0;
  for (int64_t i = 0; i < count_ - k; ++i) {
    below_lo += s[i] + s[i + k - 1] < twice ? 1.0 : 0.0;
    below_hi += s[i] + s[i + k] < twice ? 1.0 : 0.0;
  }
  below_lo += s[count_ - k] + s[count_ - 1] < twice ? 1.0 : 0.0;  // the last run for k-1
  return 0.5 * (DeviationAtCrossing(median, k - 1, static_cast<int64_t>(below_lo)) +
                DeviationAtCrossing(median, k, static_cast<int64_t>(below_hi)));
}

void SortedWindow::Estimate(double* baseline, double* scale) const {
  *baseline = Median();
  *scale = kMadToSigma * Mad(*baseline);
}

}  // namespace titan::detect
