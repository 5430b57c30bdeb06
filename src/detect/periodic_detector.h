// PeriodicDetector ("periodic"): finds dips or spikes that recur every N samples, e.g. a
// checkpoint every 50 steps seen in a per-step duration series (one sample per step, so N
// samples = N steps), or a data-loader stall every N samples of GPU utilisation.
//
// An inner zscore detector (same keys and defaults as "zscore") finds the transients. The
// sample indexes at which the last kHistory transients started are kept. When a new transient
// ends, the detector looks for a spacing P such that this transient and at least
// min_occurrences - 1 earlier ones lie at P, 2P, ... before it, each within
// max(1, tolerance * P) samples of where the chain expects it. The smallest such P wins. Only
// periodic transients are reported (with period = P, in samples, and the inner transient's
// start/end/peak/baseline/score); run a zscore detector beside it to see the others.
//
// Update(): O(1) per sample; O(kHistory^3) (bounded, a few thousand comparisons) when a
// transient ends. No allocation. Thread safety: none.
#pragma once

#include <array>

#include "src/detect/detector.h"
#include "src/detect/zscore_detector.h"

namespace titan {

struct PeriodicOptions {
  detect::ThresholdOptions inner;  // the zscore detector that finds the occurrences
  int64_t min_occurrences = 3;     // 3 .. kHistory occurrences at one spacing
  double tolerance = 0.05;         // allowed jitter, as a fraction of the period (>= 1 sample)
};

class PeriodicDetector final : public Detector {
 public:
  static constexpr int kHistory = 16;

  // Preconditions (checked): inner as for ZscoreDetector, 3 <= min_occurrences <= kHistory,
  // 0 <= tolerance < 0.5.
  explicit PeriodicDetector(const PeriodicOptions& options);

  std::string_view name() const override { return "periodic"; }
  bool Update(int64_t time_ns, double value, Detection* out) override;

 private:
  // The period that makes `position` the latest of a chain of occurrences, or 0.
  int64_t FindPeriod(int64_t position) const;

  PeriodicOptions options_;
  ZscoreDetector inner_;
  std::array<int64_t, kHistory> history_{};  // start indexes of earlier transients (ring)
  int64_t recorded_ = 0;                     // transients recorded so far
};

}  // namespace titan
