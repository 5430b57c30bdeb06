// Ledger: where a replica's wall-clock time went, in the categories of `titan run`'s goodput
// ledger (productive, checkpoint blocking, lost work, detection, restart, waiting) plus
// "degraded": the share of time lost to running shrunk (elastic policy) with fewer replicas.
// The categories always add up to the wall time. Estimate: a mean with a 95% confidence
// interval over Monte Carlo replicas.
// Thread safety: plain values.
#pragma once

#include <array>
#include <cstddef>
#include <span>

namespace titan::sim {

enum class Category : int {
  kProductive = 0,
  kCheckpoint,
  kLostWork,
  kDetection,
  kRestart,
  kWaiting,
  kDegraded,
};
inline constexpr size_t kCategoryCount = 7;
// "productive", "checkpoint", "lost_work", "detection", "restart", "waiting", "degraded".
const char* CategoryName(Category category);
inline Category CategoryAt(size_t i) { return static_cast<Category>(i); }

struct Ledger {
  std::array<double, kCategoryCount> seconds{};
  double& operator[](Category c) { return seconds[static_cast<size_t>(c)]; }
  double operator[](Category c) const { return seconds[static_cast<size_t>(c)]; }
  double Total() const;
};

struct Estimate {
  double mean = 0;
  double ci95 = 0;  // half-width of the 95% confidence interval of the mean (normal approx.)
  double stddev = 0;
  double low() const { return mean - ci95; }
  double high() const { return mean + ci95; }
};

// Mean, sample standard deviation and 1.96 * stddev / sqrt(n) of finite values. n = 1 gives a
// zero interval; no values give all zeros.
Estimate Estimate95(std::span<const double> values);

}  // namespace titan::sim
