#include "src/detect/cusum_detector.h"

#include <algorithm>
#include <cmath>

#include "src/base/check.h"

namespace titan {

CusumDetector::CusumDetector(const CusumOptions& options) : options_(options) {
  TITAN_CHECK(options.drift >= 0) << "drift " << options.drift;
  TITAN_CHECK(options.h > 0) << "h " << options.h;
  TITAN_CHECK(options.alpha > 0 && options.alpha <= 1) << "alpha " << options.alpha;
  TITAN_CHECK(options.clamp > 0) << "clamp " << options.clamp;
  TITAN_CHECK(options.min_samples >= 2) << "min_samples " << options.min_samples;
}

void CusumDetector::Side::Step(double step, int64_t time_ns, double value, int sign) {
  if (sum + step <= 0) {
    *this = Side{};
    return;
  }
  if (samples == 0) {
    start_ns = time_ns;
    peak = value;
  }
  sum += step;
  total += value;
  ++samples;
  if (sign > 0 ? value > peak : value < peak) peak = value;
}

bool CusumDetector::Alarm(const Side& side, int sign, int64_t time_ns, Detection* out) {
  *out = Detection{};
  out->detector = "cusum";
  out->direction = sign > 0 ? "spike" : "dip";
  out->start_ns = side.start_ns;
  out->end_ns = time_ns;
  out->peak = side.peak;
  out->baseline = mean_;
  out->score = side.sum;
  out->samples = side.samples;
  out->level = side.total / double(side.samples);
  mean_ = out->level;
  up_ = Side{};
  down_ = Side{};
  return true;
}

bool CusumDetector::Update(int64_t time_ns, double value, Detection* out) {
  if (!detect::IsUsableSample(value)) return false;
  if (warmup_ < options_.min_samples) {
    // Welford over the first min_samples samples seeds the EWMA.
    ++warmup_;
    const double delta = value - mean_;
    mean_ += delta / double(warmup_);
    var_ += delta * (value - mean_);
    if (warmup_ == options_.min_samples) var_ /= double(warmup_ - 1);
    return false;
  }
  const double sigma = detect::FlooredScale(std::sqrt(var_), mean_, options_.min_scale);
  const double raw_z = (value - mean_) / sigma;
  const double z = std::clamp(raw_z, -options_.clamp, options_.clamp);
  if (options_.direction != detect::Direction::kDip) {
    up_.Step(z - options_.drift, time_ns, value, 1);
  }
  if (options_.direction != detect::Direction::kSpike) {
    down_.Step(-z - options_.drift, time_ns, value, -1);
  }
  if (up_.sum > options_.h) return Alarm(up_, 1, time_ns, out);
  if (down_.sum > options_.h) return Alarm(down_, -1, time_ns, out);
  if (std::fabs(raw_z) < options_.clamp && up_.sum < 0.5 * options_.h &&
      down_.sum < 0.5 * options_.h) {
    const double delta = value - mean_;
    mean_ += options_.alpha * delta;
    var_ = (1 - options_.alpha) * (var_ + options_.alpha * delta * delta);
  }
  return false;
}

}  // namespace titan
