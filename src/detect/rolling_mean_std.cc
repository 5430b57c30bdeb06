#include "src/detect/rolling_mean_std.h"

#include "src/base/check.h"

namespace titan::detect {

RollingMeanStd::RollingMeanStd(int64_t capacity)
    : capacity_(capacity),
      inv_capacity_(1.0 / double(capacity)),
      ring_(new double[static_cast<size_t>(capacity)]) {
  TITAN_CHECK(capacity >= 2) << "window " << capacity;
}

void RollingMeanStd::Recompute() {
  replaced_ = 0;
  double sum = 0;
  for (int64_t i = 0; i < count_; ++i) sum += ring_[i];
  const double mean = sum / double(count_);
  double m2 = 0;
  for (int64_t i = 0; i < count_; ++i) m2 += (ring_[i] - mean) * (ring_[i] - mean);
  mean_ = mean;
  m2_ = m2;
}

}  // namespace titan::detect
