// ThresholdDetector<Stats>: the Detector shared by zscore (Stats = RollingMeanStd) and mad
// (Stats = SortedWindow); those classes only choose the statistics and check the options.
//
// Each usable sample is judged against the window statistics *before* it: score = (value -
// baseline) / scale, scale floored (see FlooredScale). |score| > k on a watched side makes the
// sample anomalous; anomalous samples open or extend a Transient and are NOT added to the window,
// so a long spike does not drag the baseline after it. The first normal sample closes the
// transient (reported then) and is added to the window. A side flip (spike straight into dip)
// reports the first transient and opens the second. A transient that reaches max_duration
// samples is reported and the window is cleared: the signal has a new level, which is re-learnt
// from the next min_samples samples (no detection while warming up).
//
// Stats must provide: Add(double), Clear(), size() (samples held) and
// Estimate(double* baseline, double* scale). Thread safety: none.
#pragma once

#include <cstdint>
#include <utility>

#include "src/detect/transient.h"

namespace titan::detect {

struct ThresholdOptions {
  int64_t window = 100;      // samples in the rolling baseline window
  double k = 3;              // threshold in scales (sigmas or robust sigmas)
  int64_t min_samples = 20;  // samples in the window before anything is judged
  Direction direction = Direction::kBoth;
  int64_t max_duration = 1000;  // samples; a longer transient is reported and re-baselined (>= 2)
  double min_scale = 0;         // absolute floor of the scale, in the signal's unit
};

// TITAN_CHECKs the invariants detectors rely on (user input is validated by MakeDetector);
// returns `options`.
const ThresholdOptions& CheckThresholdOptions(const ThresholdOptions& options, int64_t min_window,
                                              int64_t max_window);

template <typename Stats>
class ThresholdDetector : public Detector {
 public:
  // `name` must be a static string (it ends up in Detection::detector).
  ThresholdDetector(const char* name, const ThresholdOptions& options, Stats stats)
      : name_(name), options_(options), stats_(std::move(stats)) {}

  std::string_view name() const final { return name_; }

  bool Update(int64_t time_ns, double value, Detection* out) final {
    if (!IsUsableSample(value)) return false;
    const int64_t index = index_++;
    if (stats_.size() < options_.min_samples) {
      stats_.Add(value);
      return false;
    }
    double baseline, scale;
    stats_.Estimate(&baseline, &scale);
    const double score = (value - baseline) / FlooredScale(scale, baseline, options_.min_scale);
    const int sign = Classify(score, options_.k, options_.direction);
    if (sign == 0) {
      stats_.Add(value);
      return transient_.active() && Report(out);
    }
    if (transient_.active() && transient_.sign() != sign) {
      Report(out);
      transient_.Begin(index, time_ns, value, baseline, score, sign);
      return true;
    }
    if (transient_.active()) {
      transient_.Extend(time_ns, value, score);
    } else {
      transient_.Begin(index, time_ns, value, baseline, score, sign);
    }
    if (transient_.samples() < options_.max_duration) return false;
    stats_.Clear();
    return Report(out);
  }

  // Index (0-based count of usable samples) of the first sample of the last reported transient.
  int64_t reported_start_index() const { return reported_start_index_; }
  const Stats& stats() const { return stats_; }

 private:
  bool Report(Detection* out) {
    reported_start_index_ = transient_.start_index();
    transient_.Finish(name_, out);
    return true;
  }

  const char* name_;
  ThresholdOptions options_;
  Stats stats_;
  Transient transient_;
  int64_t index_ = 0;
  int64_t reported_start_index_ = 0;
};

}  // namespace titan::detect
