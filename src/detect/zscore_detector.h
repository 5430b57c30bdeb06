// ZscoreDetector ("zscore"): a sample is anomalous when it lies more than k standard deviations
// from the mean of the sliding window of the last `window` normal samples: the standard
// "step slower than mean + 3 sigma of the sliding window" rule. Defaults: window 100, k 3,
// min_samples 20, both directions. Transient bookkeeping as in threshold_detector.h.
// Update(): O(1), no allocation. Thread safety: none.
#pragma once

#include "src/detect/rolling_mean_std.h"
#include "src/detect/threshold_detector.h"

namespace titan {

class ZscoreDetector final : public detect::ThresholdDetector<detect::RollingMeanStd> {
 public:
  // Preconditions (checked; MakeDetector validates user input first): window >= 2,
  // 1 <= min_samples <= window, k > 0, max_duration >= 2.
  explicit ZscoreDetector(const detect::ThresholdOptions& options);
};

}  // namespace titan
