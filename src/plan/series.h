// Time series for titan plan: what the readers produce (RawSeries: points at times) and what the
// forecasters take (RegularSeries: one value per step, NaN where nothing was observed).
//
// Two kinds of points:
//   gauge   a level sampled at times (GPUs in use, running + pending GPUs, a request rate that
//           Prometheus computed); a step's value aggregates the samples in it (mean by default),
//           and a step without a sample is a gap (NaN).
//   events  each point is one occurrence with a weight (a request: 1, or its tokens); a step's
//           value is the weights' sum per second (a rate), and a step without events inside the
//           observed span is 0, not a gap.
// Times are seconds since the Unix epoch (UTC), or offsets from a run's start where the source
// has no wall clock (then the series' calendar phase is arbitrary and the output says so).
//
// Thread safety: plain values; pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "src/base/status.h"

namespace titan::plan {

inline constexpr double kDaySeconds = 86400;
// A gap in a series; a missing number.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class PointKind { kGauge, kEvents };

// How a step's samples become its value (gauges), or how finer steps become a coarser one.
enum class Aggregate { kMean, kMax, kMin, kSum, kLast };
// "mean" -> kMean ...; false for anything else.
bool ParseAggregate(std::string_view name, Aggregate* aggregate);
const char* AggregateName(Aggregate aggregate);

// Records a reader skipped, by reason, with the first few locations ("file:line: reason"), so
// that bad records are counted and shown instead of failing the whole series.
struct SkipStats {
  int64_t skipped = 0;
  std::vector<std::string> examples;  // at most kMaxExamples
  static constexpr size_t kMaxExamples = 5;
  void Skip(std::string where_and_why);
};

struct RawSeries {
  std::string name;    // what the values are ("running_gpu_num+pending_gpu_num", "requests")
  std::string unit;    // of a step's value: "GPUs", "requests/s", "tokens/s"
  std::string source;  // the reader that made it ("csv", "prometheus", "azure trace", ...)
  PointKind kind = PointKind::kGauge;
  bool wall_clock = true;  // false: times are offsets from a start, not calendar times
  std::vector<std::pair<double, double>> points;  // (time_seconds, value), any order
  SkipStats skips;
};

struct RegularSeries {
  std::string name, unit;
  double start_seconds = 0;  // start of the first step
  double step_seconds = 0;   // > 0
  bool wall_clock = true;
  std::vector<double> values;  // one per step; NaN: a gap

  size_t size() const { return values.size(); }
  double TimeAt(size_t i) const { return start_seconds + step_seconds * static_cast<double>(i); }
  // Values that are not gaps.
  size_t Observed() const;
};

// A series may hold at most this many steps (8 years of minutes; a grid of them takes 200 MB
// while it is built).
inline constexpr size_t kMaxSteps = size_t{1} << 22;

// Puts `raw` on a grid of `step_seconds` that starts at a whole multiple of the step (so that
// steps of an hour begin on the hour). Gauges: `aggregate` over each step's samples; events:
// the weights' sum per second. Errors: no points, a non-positive step, or more than kMaxSteps
// steps (naming the span and the step, and what to do).
Result<RegularSeries> Regularize(const RawSeries& raw, double step_seconds, Aggregate aggregate);

// A coarser grid: each output step aggregates `factor` input steps (gaps ignored; all gaps: a
// gap). The output starts at a multiple of the new step. `factor` >= 1.
RegularSeries Downsample(const RegularSeries& series, int64_t factor, Aggregate aggregate);

// The names in a sum of columns or keys: "a+b" -> {"a", "b"}; "" -> {}. Names are trimmed;
// an empty name ("a++b") makes the result empty.
std::vector<std::string> SplitSum(std::string_view expression);

// The median spacing of a raw series' distinct times (0 when fewer than two).
double MedianSpacingSeconds(const RawSeries& raw);

}  // namespace titan::plan
