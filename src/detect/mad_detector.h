// MadDetector ("mad"): robust z-score against the rolling median and MAD of the last `window`
// normal samples: robust_z = (value - median) / (1.4826 * MAD), anomalous when |robust_z| > k
// (Iglewicz-Hoaglin's 3.5 by default). Unlike zscore, a few outliers inside the window do not
// inflate the scale; but the MAD of a small window is itself noisy, so on Gaussian noise it fires
// more often than zscore at the same k (~5e-5 per sample at k 5, window 64, against ~3e-6).
// Defaults: window 64 (at most SortedWindow::kMaxCapacity), k 3.5, min_samples 20.
// Update(): O(log window) or a vectorised count for windows up to 128, plus one memmove inside a
// window-sized array; no allocation. Transient bookkeeping as in threshold_detector.h.
// Thread safety: none.
#pragma once

#include "src/detect/sorted_window.h"
#include "src/detect/threshold_detector.h"

namespace titan {

class MadDetector final : public detect::ThresholdDetector<detect::SortedWindow> {
 public:
  // Preconditions (checked): 3 <= window <= kMaxCapacity, 1 <= min_samples <= window, k > 0,
  // max_duration >= 2.
  explicit MadDetector(const detect::ThresholdOptions& options);
};

}  // namespace titan
