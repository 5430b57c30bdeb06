#include "src/detect/threshold_detector.h"

#include "src/base/check.h"

namespace titan::detect {

const ThresholdOptions& CheckThresholdOptions(const ThresholdOptions& o, int64_t min_window,
                                              int64_t max_window) {
  TITAN_CHECK(o.window >= min_window && o.window <= max_window) << "window " << o.window;
  TITAN_CHECK(o.min_samples >= 1 && o.min_samples <= o.window) << "min_samples " << o.min_samples;
  TITAN_CHECK(o.k > 0) << "k " << o.k;
  TITAN_CHECK(o.max_duration >= 2) << "max_duration " << o.max_duration;
  return o;
}

}  // namespace titan::detect
