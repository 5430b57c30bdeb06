// MadDetector ("mad"): robust z-score against the rolling median and MAD of the last `window`
// normal samples: robust_z = (value - median) / (1.4826 * MAD), anomalous when |robust_z| > k
// (Iglewicz-Hoaglin's 3.5 by default). Unlike zscore, a few outliers inside the window do not
// inflate the scale. Defaults: window 64 (at most SortedWindow::kMaxCapacity), k 3.5,
// min_samples 20. Update(): O(log window) searches plus one memmove inside a window-sized array;
// no allocation. Thread safety: none.
#pragma once

#include "src/detect/detector.h"
#include "src/detect/sorted_window.h"
#include "src/detect/threshold_detector.h"

namespace titan {

class MadDetector final : public Detector {
 public:
  // Preconditions (checked): 3 <= window <= kMaxCapacity, 1 <= min_samples <= window, k > 0,
  // max_duration >= 2.
  explicit MadDetector(const detect::ThresholdOptions& options);

  std::string_view name() const override { return "mad"; }
  bool Update(int64_t time_ns, double value, Detection* out) override {
    return core_.Update("mad", time_ns, value, out);
  }

 private:
  detect::ThresholdDetector<detect::SortedWindow> core_;
};

}  // namespace titan
