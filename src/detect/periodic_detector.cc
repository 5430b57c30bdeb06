#include "src/detect/periodic_detector.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "src/base/check.h"

namespace titan {

PeriodicDetector::PeriodicDetector(const PeriodicOptions& options)
    : options_(options), inner_(options.inner) {
  TITAN_CHECK(options.min_occurrences >= 3 && options.min_occurrences <= kHistory)
      << "min_occurrences " << options.min_occurrences;
  TITAN_CHECK(options.tolerance >= 0 && options.tolerance < 0.5)
      << "tolerance " << options.tolerance;
}

int64_t PeriodicDetector::FindPeriod(int64_t position) const {
  // Earlier occurrences, most recent first (so candidate periods come smallest first).
  std::array<int64_t, kHistory> earlier;
  const int count = static_cast<int>(std::min<int64_t>(recorded_, kHistory));
  for (int i = 0; i < count; ++i) earlier[i] = history_[(recorded_ - 1 - i) % kHistory];

  for (int c = 0; c < count; ++c) {
    const int64_t period = position - earlier[c];
    if (period < 2) continue;
    const int64_t tolerance =
        std::max<int64_t>(1, std::llround(options_.tolerance * double(period)));
    int64_t chain = 2;
    int64_t last = earlier[c];
    for (int next = c + 1; next < count && chain < options_.min_occurrences; ++next) {
      // The nearest older occurrence to where the chain expects the next one.
      const int64_t expected = last - period;
      int best = -1;
      for (int j = next; j < count; ++j) {
        if (std::llabs(earlier[j] - expected) <= tolerance &&
            (best < 0 ||
             std::llabs(earlier[j] - expected) < std::llabs(earlier[best] - expected))) {
          best = j;
        }
      }
      if (best < 0) break;
      ++chain;
      last = earlier[best];
      next = best;
    }
    if (chain >= options_.min_occurrences) {
      return std::llround(double(position - last) / double(chain - 1));
    }
  }
  return 0;
}

bool PeriodicDetector::Update(int64_t time_ns, double value, Detection* out) {
  Detection occurrence;
  if (!inner_.Update(time_ns, value, &occurrence)) return false;
  const int64_t position = inner_.reported_start_index();
  const int64_t period = FindPeriod(position);
  history_[recorded_ % kHistory] = position;
  ++recorded_;
  if (period == 0) return false;
  *out = occurrence;
  out->detector = "periodic";
  out->period = period;
  return true;
}

}  // namespace titan
