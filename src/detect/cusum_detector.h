// CusumDetector ("cusum"): two-sided CUSUM for level shifts (a throughput that drops and stays
// down, a memory level that steps up), on values standardised against an EWMA baseline:
//
//   z  = clamp((x - mu) / sigma, -clamp, +clamp)      mu, sigma^2: EWMA mean / variance (alpha)
//   S+ = max(0, S+ + z - drift)    S- = max(0, S- - z - drift)
//
// An alarm is raised when S+ (or S-) exceeds h. The Detection is reported at the alarm: the shift
// is a step, not a bump, and "the transient" is the change itself.
//   start_ns: the change point estimate, i.e. the first sample of the run that took S from 0
//             above h (the classic CUSUM estimate); end_ns: the alarm sample;
//   baseline: mu before the shift; level: mean of the samples from start to alarm (the new
//   level); peak: the most extreme sample of the run; score: S at the alarm; samples: run length.
// After an alarm the baseline jumps to the new level (sigma is kept) and both sums restart, so a
// shift is reported once and a return to the old level is reported as the opposite shift.
//
// Defaults (drift 1, h 8: shifts of 2 sigma and more) give an in-control average run length of
// ~1e7 samples on Gaussian noise (Siegmund's approximation), i.e. days between false alarms at
// 10 ms sampling; the textbook h 5 / drift 0.5 alarms every ~500 samples, every 5 s.
// Clamping z (a Huber-type CUSUM) keeps one wild sample from raising an alarm alone: with the
// defaults (clamp 3) at least five consecutive extreme samples are needed;
// single-sample spikes are the zscore/mad detectors' job. Samples are folded into the EWMA only
// when |z| is below clamp and both sums are below h/2, so neither a wild sample nor a shift in
// progress drags the baseline or inflates sigma.
// The first min_samples samples initialise mu and sigma (no alarms meanwhile).
//
// Update(): O(1), no allocation. Thread safety: none.
#pragma once

#include "src/detect/detector.h"
#include "src/detect/transient.h"

namespace titan {

struct CusumOptions {
  double drift = 1;     // allowance per sample, in sigmas (half the smallest shift of interest)
  double h = 8;         // decision threshold, in sigmas
  double alpha = 0.01;  // EWMA weight of a new sample (0 < alpha <= 1)
  double clamp = 3;     // |z| is clamped to this many sigmas
  int64_t min_samples = 20;
  detect::Direction direction = detect::Direction::kBoth;
  double min_scale = 0;  // absolute floor of sigma, in the signal's unit
};

class CusumDetector final : public Detector {
 public:
  // Preconditions (checked): drift >= 0, h > 0, 0 < alpha <= 1, clamp > 0, min_samples >= 2.
  explicit CusumDetector(const CusumOptions& options);

  std::string_view name() const override { return "cusum"; }
  bool Update(int64_t time_ns, double value, Detection* out) override;

  double mean() const { return mean_; }

 private:
  // One side's cumulative sum and the run that carried it above zero.
  struct Side {
    double sum = 0;
    int64_t start_ns = 0;
    double peak = 0;
    double total = 0;  // sum of the run's samples, for the new level
    int64_t samples = 0;
    // Adds `step` (z - drift for the upper side, -z - drift for the lower); restarts at 0.
    void Step(double step, int64_t time_ns, double value, int sign);
  };
  bool Alarm(const Side& side, int sign, int64_t time_ns, Detection* out);

  CusumOptions options_;
  int64_t warmup_ = 0;  // samples seen while initialising
  double mean_ = 0;
  double var_ = 0;
  Side up_, down_;
};

}  // namespace titan
