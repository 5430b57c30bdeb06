// Ledger: where a replica's wall-clock time went, in the categories of `titan run`'s goodput
// ledger, "degraded" being the share of time lost to running shrunk (elastic policy) with fewer
// replicas. The categories always add up to the wall time. Estimate: a mean with a 95% confidence
// interval over Monte Carlo replicas.
// Thread safety: plain values.
#pragma once

#include <array>
#include <cstddef>
#include <span>

#include "src/base/goodput_category.h"

namespace titan::sim {

// The categories are titan's one goodput vocabulary (src/base/goodput_category.h); titan sim
// never counts kStartup (its restart includes the start-up).
using Category = GoodputCategory;
inline constexpr size_t kCategoryCount = kGoodputCategoryCount;
constexpr const char* CategoryName(Category category) { return GoodputCategoryName(category); }
constexpr Category CategoryAt(size_t i) { return GoodputCategoryAt(i); }

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
