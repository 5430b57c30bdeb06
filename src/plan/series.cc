#include "src/plan/series.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "src/base/duration.h"
#include "src/base/text.h"

namespace titan::plan {

namespace {

// Accumulates one step's values.
struct Bucket {
  double sum = 0, min = 0, max = 0, last = 0;
  int64_t count = 0;
  void Add(double v) {
    if (count == 0) {
      min = max = v;
    } else {
      min = std::min(min, v);
      max = std::max(max, v);
    }
    sum += v;
    last = v;
    ++count;
  }
  double Value(Aggregate aggregate) const {
    if (count == 0) return kNaN;
    switch (aggregate) {
      case Aggregate::kMean:
        return sum / static_cast<double>(count);
      case Aggregate::kMax:
        return max;
      case Aggregate::kMin:
        return min;
      case Aggregate::kSum:
        return sum;
      case Aggregate::kLast:
        return last;
    }
    return kNaN;
  }
};

std::string Seconds(double s) {
  return FormatDurationShort(static_cast<int64_t>(std::min(s, 9e9) * 1e9));
}

}  // namespace

bool ParseAggregate(std::string_view name, Aggregate* aggregate) {
  static constexpr std::pair<const char*, Aggregate> kNames[] = {
      {"mean", Aggregate::kMean}, {"max", Aggregate::kMax},   {"min", Aggregate::kMin},
      {"sum", Aggregate::kSum},   {"last", Aggregate::kLast},
  };
  for (const auto& [n, a] : kNames) {
    if (name == n) {
      *aggregate = a;
      return true;
    }
  }
  return false;
}

const char* AggregateName(Aggregate aggregate) {
  switch (aggregate) {
    case Aggregate::kMean:
      return "mean";
    case Aggregate::kMax:
      return "max";
    case Aggregate::kMin:
      return "min";
    case Aggregate::kSum:
      return "sum";
    case Aggregate::kLast:
      return "last";
  }
  return "?";
}

void SkipStats::Skip(std::string where_and_why) {
  ++skipped;
  if (examples.size() < kMaxExamples) examples.push_back(std::move(where_and_why));
}

size_t RegularSeries::Observed() const {
  return static_cast<size_t>(
      std::count_if(values.begin(), values.end(), [](double v) { return !std::isnan(v); }));
}

Result<RegularSeries> Regularize(const RawSeries& raw, double step_seconds, Aggregate aggregate) {
  if (!(step_seconds > 0) || !std::isfinite(step_seconds)) {
    return InvalidArgumentError(fmt::format("the step must be positive, not {}", step_seconds));
  }
  if (raw.points.empty()) {
    return InvalidArgumentError(fmt::format(
        "the series '{}' has no points ({}){}", raw.name, raw.source,
        raw.skips.skipped > 0 ? fmt::format(": all {} records were skipped, e.g. {}",
                                            raw.skips.skipped, raw.skips.examples.front())
                              : ""));
  }
  double first = raw.points.front().first, last = first;
  for (const auto& [t, v] : raw.points) {
    first = std::min(first, t);
    last = std::max(last, t);
  }
  const double start = std::floor(first / step_seconds) * step_seconds;
  const double steps = std::floor((last - start) / step_seconds) + 1;
  if (!(steps <= static_cast<double>(kMaxSteps))) {
    return InvalidArgumentError(fmt::format(
        "the series '{}' spans {} ({} .. {} s), {:.3g} steps of {}: at most {} steps; give a "
        "longer --step or --resolution, or a shorter range",
        raw.name, Seconds(last - first), first, last, steps, Seconds(step_seconds), kMaxSteps));
  }
  const size_t n = static_cast<size_t>(steps);
  std::vector<Bucket> buckets(n);
  // Points in time order, so that kLast is the latest sample of its step.
  std::vector<std::pair<double, double>> points = raw.points;
  std::stable_sort(points.begin(), points.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [t, v] : points) {
    const size_t i = std::min(n - 1, static_cast<size_t>(std::floor((t - start) / step_seconds)));
    buckets[i].Add(v);
  }
  RegularSeries out;
  out.name = raw.name;
  out.unit = raw.unit;
  out.start_seconds = start;
  out.step_seconds = step_seconds;
  out.wall_clock = raw.wall_clock;
  out.values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    out.values[i] = raw.kind == PointKind::kEvents ? buckets[i].sum / step_seconds
                                                   : buckets[i].Value(aggregate);
  }
  return out;
}

RegularSeries Downsample(const RegularSeries& series, int64_t factor, Aggregate aggregate) {
  RegularSeries out = series;
  if (factor <= 1 || series.values.empty()) return out;
  out.step_seconds = series.step_seconds * static_cast<double>(factor);
  out.start_seconds = std::floor(series.start_seconds / out.step_seconds) * out.step_seconds;
  const int64_t offset = static_cast<int64_t>(
      std::llround((series.start_seconds - out.start_seconds) / series.step_seconds));
  const size_t n = static_cast<size_t>(
      (offset + static_cast<int64_t>(series.values.size()) + factor - 1) / factor);
  std::vector<Bucket> buckets(n);
  for (size_t i = 0; i < series.values.size(); ++i) {
    const double v = series.values[i];
    if (!std::isnan(v)) buckets[(static_cast<int64_t>(i) + offset) / factor].Add(v);
  }
  out.values.resize(n);
  for (size_t i = 0; i < n; ++i) out.values[i] = buckets[i].Value(aggregate);
  return out;
}

std::vector<std::string> SplitSum(std::string_view expression) {
  std::vector<std::string> names;
  if (Trim(expression).empty()) return names;
  while (true) {
    const size_t plus = expression.find('+');
    const std::string_view name = Trim(expression.substr(0, plus));
    if (name.empty()) return {};
    names.emplace_back(name);
    if (plus == std::string_view::npos) return names;
    expression.remove_prefix(plus + 1);
  }
}

double MedianSpacingSeconds(const RawSeries& raw) {
  std::vector<double> times;
  times.reserve(raw.points.size());
  for (const auto& p : raw.points) times.push_back(p.first);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  if (times.size() < 2) return 0;
  std::vector<double> gaps(times.size() - 1);
  for (size_t i = 1; i < times.size(); ++i) gaps[i - 1] = times[i] - times[i - 1];
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  return gaps[gaps.size() / 2];
}

}  // namespace titan::plan
