// ZscoreDetector ("zscore"): a sample is anomalous when it lies more than k standard deviations
// from the mean of the sliding window of the last `window` normal samples: the standard
// "step slower than mean + 3 sigma of the sliding window" rule. Defaults: window 100, k 3,
// min_samples 20, both directions. Transient bookkeeping as in threshold_detector.h.
// Update(): O(1), no allocation. Thread safety: none.
#pragma once

#include "src/detect/detector.h"
#include "src/detect/rolling_mean_std.h"
#include "src/detect/threshold_detector.h"

namespace titan {

class ZscoreDetector final : public Detector {
 public:
  // Preconditions (checked; MakeDetector validates user input first): window >= 2,
  // 1 <= min_samples <= window, k > 0, max_duration >= 2.
  explicit ZscoreDetector(const detect::ThresholdOptions& options);

  std::string_view name() const override { return "zscore"; }
  bool Update(int64_t time_ns, double value, Detection* out) override {
    return core_.Update("zscore", time_ns, value, out);
  }
  // Sample index (0-based, usable samples only) where the last reported transient started.
  int64_t reported_start_index() const { return core_.reported_start_index(); }

 private:
  detect::ThresholdDetector<detect::RollingMeanStd> core_;
};

}  // namespace titan
