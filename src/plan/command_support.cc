#include "src/plan/command_support.h"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "src/base/command_failure.h"
#include "src/base/command_line.h"
#include "src/base/duration.h"
#include "src/base/duration_option.h"
#include "src/base/text.h"
#include "src/fleet/time_text.h"
#include "src/plan/prometheus_source.h"
#include "src/plan/read_series.h"

namespace titan::plan {

int Fail(const Status& status) { return ReportCommandFailure("titan plan", status); }

void AddSeriesFlags(CLI::App& app, SeriesFlags* f) {
  app.add_option("--value", f->value,
                 "Which column or key is the value; A+B adds columns (CSV: the other column of "
                 "two; JSON lines: value; Azure traces and gateway access logs: each request "
                 "counts 1, or name token columns)");
  AddDurationOption(app, "--step", &f->step_ns, "The forecast's step", kSecondNs, 7 * kDayNs);
  AddDurationOption(app, "--resolution", &f->resolution_ns,
                    "Grid the data is first put on before --aggregate makes steps of it (events "
                    "and Prometheus: 1m by default; e.g. per-minute rates -> the hour's peak)",
                    0, kDayNs);
  app.add_option("--aggregate", f->aggregate,
                 "How a step's values combine: mean (default), max (the step's peak), min, sum, "
                 "last")
      ->check(CLI::IsMember({"mean", "max", "min", "sum", "last"}));
  app.add_option("--query", f->query, "PromQL, when SERIES is a Prometheus (http://host:9090)");
  app.add_option("--start", f->start,
                 "Prometheus: first time (UTC or epoch seconds; default 14 days before --end)");
  app.add_option("--end", f->end, "Prometheus: last time (default now)");
}

Result<RegularSeries> LoadSeries(const SeriesFlags& f) {
  Aggregate aggregate = Aggregate::kMean;
  if (!ParseAggregate(f.aggregate, &aggregate)) {
    return InvalidArgumentError(
        fmt::format("--aggregate {}: expected mean, max, min, sum or last", Excerpt(f.aggregate)));
  }
  const double step = static_cast<double>(f.step_ns) / 1e9;
  RawSeries raw;
  const bool prometheus = f.source.starts_with("http://") || f.source.starts_with("https://");
  int64_t resolution_ns = f.resolution_ns;
  if (prometheus) {
    if (f.query.empty()) {
      return InvalidArgumentError(
          fmt::format("{} is a Prometheus: give the PromQL with --query", f.source));
    }
    PrometheusRange range;
    range.url = f.source;
    range.query = f.query;
    if (resolution_ns == 0) resolution_ns = std::min<int64_t>(f.step_ns, 60 * kSecondNs);
    range.step_seconds = static_cast<double>(resolution_ns) / 1e9;
    range.end_seconds =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (!f.end.empty() && !fleet::ParseTimeSeconds(f.end, &range.end_seconds)) {
      return InvalidArgumentError(
          fmt::format("--end '{}': expected a UTC time or epoch seconds", Excerpt(f.end)));
    }
    range.start_seconds = range.end_seconds - 14 * 86400.0;
    if (!f.start.empty() && !fleet::ParseTimeSeconds(f.start, &range.start_seconds)) {
      return InvalidArgumentError(
          fmt::format("--start '{}': expected a UTC time or epoch seconds", Excerpt(f.start)));
    }
    TITAN_ASSIGN_OR_RETURN(raw, ReadPrometheus(range, stderr));
  } else {
    TITAN_ASSIGN_OR_RETURN(raw, ReadSeriesFile(f.source, f.value));
    if (resolution_ns == 0 && raw.kind == PointKind::kEvents) {
      resolution_ns = std::min<int64_t>(f.step_ns, 60 * kSecondNs);
    }
  }
  if (raw.skips.skipped > 0) {
    std::fprintf(stderr, "titan plan: skipped %lld records that could not be read, e.g. %s\n",
                 static_cast<long long>(raw.skips.skipped), raw.skips.examples.front().c_str());
  }
  if (resolution_ns == 0) return Regularize(raw, step, aggregate);
  if (f.step_ns % resolution_ns != 0) {
    return InvalidArgumentError(fmt::format("--step {} is not a whole number of --resolution {}",
                                            FormatDuration(f.step_ns),
                                            FormatDuration(resolution_ns)));
  }
  TITAN_ASSIGN_OR_RETURN(
      RegularSeries fine,
      Regularize(raw, static_cast<double>(resolution_ns) / 1e9, Aggregate::kMean));
  return Downsample(fine, f.step_ns / resolution_ns, aggregate);
}

Result<std::vector<double>> ParseLevels(const std::string& text) {
  std::vector<double> levels;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view part = Trim(rest.substr(0, comma));
    double q = 0;
    if (!ParseDouble(part, &q) || !(q > 0 && q < 1)) {
      return InvalidArgumentError(fmt::format(
          "--quantiles: '{}' is not a level between 0 and 1 (e.g. 0.05,0.5,0.95)", Excerpt(part)));
    }
    levels.push_back(q);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  return levels;
}

}  // namespace titan::plan
