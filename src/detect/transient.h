// Building blocks shared by the threshold detectors (zscore, mad, cusum, periodic):
//  - Direction: which side of the baseline counts as anomalous;
//  - IsUsableSample: the input filter every detector applies (NaN, +-inf and absurd magnitudes
//    are ignored, so no statistic can overflow into inf or NaN);
//  - Transient: the bookkeeping of one transient in progress (start, end, peak, score).
//
// All of it is allocation-free and header-only so that Update() inlines. Thread safety: none
// (owned by one detector).
#pragma once

#include <cmath>
#include <cstdint>

#include "src/detect/detector.h"

namespace titan::detect {

// Encoded as a number because DetectorSpec params are doubles ("direction=spike" parses to 1).
enum class Direction : int8_t { kDip = -1, kBoth = 0, kSpike = 1 };

// Samples with a magnitude above this are ignored like NaN: their squares still fit in a double
// with room for a million of them to be summed (1e150^2 * 1e6 < DBL_MAX).
inline constexpr double kMaxAbsSample = 1e150;

inline bool IsUsableSample(double value) {
  return std::isfinite(value) && std::fabs(value) <= kMaxAbsSample;
}

// The scale (std, MAD) below which a window is treated as flat: a constant signal has scale 0,
// and dividing by it would make every rounding error infinitely anomalous. The floor is the
// larger of the user's absolute floor, 1e-9 of the level, and 1e-12.
inline double FlooredScale(double scale, double level, double min_scale) {
  double floor = std::fmax(min_scale, std::fmax(1e-9 * std::fabs(level), 1e-12));
  return std::fmax(scale, floor);
}

// +1 when `score` (a signed number of scales away from the baseline) is beyond `k` on the spike
// side and spikes are watched, -1 likewise for dips, else 0.
inline int Classify(double score, double k, Direction direction) {
  if (score > k && direction != Direction::kDip) return 1;
  if (score < -k && direction != Direction::kSpike) return -1;
  return 0;
}

// One transient in progress. Begin() opens it, Extend() adds anomalous samples, Finish() fills a
// Detection and closes it.
class Transient {
 public:
  bool active() const { return samples_ > 0; }
  int sign() const { return sign_; }
  int64_t samples() const { return samples_; }
  int64_t start_index() const { return start_index_; }

  // `index` is the detector's sample counter (for the periodic detector); `score` is signed.
  void Begin(int64_t index, int64_t time_ns, double value, double baseline, double score,
             int sign) {
    sign_ = sign;
    start_index_ = index;
    start_ns_ = end_ns_ = time_ns;
    peak_ = value;
    baseline_ = baseline;
    score_ = std::fabs(score);
    samples_ = 1;
  }

  void Extend(int64_t time_ns, double value, double score) {
    end_ns_ = time_ns;
    if (sign_ > 0 ? value > peak_ : value < peak_) peak_ = value;
    score_ = std::fmax(score_, std::fabs(score));
    ++samples_;
  }

  void Finish(const char* detector, Detection* out) {
    *out = Detection{};
    out->detector = detector;
    out->direction = sign_ > 0 ? "spike" : "dip";
    out->start_ns = start_ns_;
    out->end_ns = end_ns_;
    out->peak = peak_;
    out->baseline = baseline_;
    out->score = score_;
    out->samples = samples_;
    samples_ = 0;
  }

 private:
  int sign_ = 0;
  int64_t start_index_ = 0;
  int64_t start_ns_ = 0;
  int64_t end_ns_ = 0;
  double peak_ = 0;
  double baseline_ = 0;
  double score_ = 0;
  int64_t samples_ = 0;
};

}  // namespace titan::detect
