// Helpers for the detector unit tests: feed a series sampled every 10 ms, collect detections.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "src/base/clock.h"
#include "src/detect/detector.h"

namespace titan::detect_test {

inline constexpr int64_t kStartNs = 1'700'000'000 * kNsPerSecond;
inline constexpr int64_t kStepNs = 10 * kNsPerMs;

inline int64_t TimeOf(int64_t index) { return kStartNs + index * kStepNs; }

inline std::vector<Detection> Feed(Detector& detector, const std::vector<double>& values) {
  std::vector<Detection> found;
  for (size_t i = 0; i < values.size(); ++i) {
    Detection d;
    if (detector.Update(TimeOf(static_cast<int64_t>(i)), values[i], &d)) found.push_back(d);
  }
  return found;
}

// `n` samples uniform in [level - 1, level + 1] (sigma 0.577): never beyond 1.74 sigma, so a
// 3-sigma detector has no false positives on it and tests can assert exact counts.
inline std::vector<double> BoundedNoise(size_t n, double level, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(-1, 1);
  std::vector<double> values(n);
  for (double& v : values) v = level + noise(rng);
  return values;
}

}  // namespace titan::detect_test
