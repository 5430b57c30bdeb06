#include "src/plan/demand.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "src/base/duration.h"
#include "src/fleet/time_text.h"
#include "src/plan/backtest.h"

namespace titan::plan {

namespace {

nlohmann::json Numbers(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (double v : values) {
    out.push_back(std::isnan(v) ? nlohmann::json() : nlohmann::json(v));
  }
  return out;
}

std::string Step(double seconds) {
  return FormatDurationShort(static_cast<int64_t>(seconds * 1e9));
}

// The time for people: calendar time, or an offset when the series has no wall clock.
std::string When(double seconds, bool wall_clock) {
  return wall_clock ? fleet::FormatTime(seconds) : "+" + Step(seconds);
}

}  // namespace

nlohmann::json DemandJson(const RegularSeries& h, const Forecast& f) {
  nlohmann::json quantiles = nlohmann::json::object();
  for (size_t i = 0; i < f.quantile_levels.size(); ++i) {
    quantiles[LevelKey(f.quantile_levels[i])] = Numbers(f.quantiles[i]);
  }
  return {{"kind", "titan.plan.demand"},
          {"series",
           {{"name", h.name},
            {"unit", h.unit},
            {"wall_clock", h.wall_clock},
            {"start", h.start_seconds},
            {"step_seconds", h.step_seconds},
            {"values", Numbers(h.values)}}},
          {"forecast",
           {{"model", f.model},
            {"description", f.description},
            {"start", f.start_seconds},
            {"step_seconds", f.step_seconds},
            {"point", Numbers(f.point)},
            {"quantiles", quantiles}}}};
}

std::string ForecastCsv(const Forecast& f) {
  std::string out = "time,point";
  for (double q : f.quantile_levels) out += "," + LevelKey(q);
  out += "\n";
  for (size_t h = 0; h < f.point.size(); ++h) {
    out += fmt::format("{},{:.6g}", f.start_seconds + f.step_seconds * static_cast<double>(h),
                       f.point[h]);
    for (const auto& q : f.quantiles) out += fmt::format(",{:.6g}", q[h]);
    out += "\n";
  }
  return out;
}

std::string FormatDemand(const RegularSeries& h, const Forecast& f) {
  std::string out;
  double sum = 0, peak = -INFINITY;
  size_t observed = 0;
  for (double v : h.values) {
    if (std::isnan(v)) continue;
    sum += v;
    peak = std::max(peak, v);
    ++observed;
  }
  const std::string unit = h.unit.empty() ? "" : " " + h.unit;
  out += fmt::format("series    {}{}: {} steps of {} from {} ({} gaps), mean {:.4g}, peak {:.4g}\n",
                     h.name, h.unit.empty() ? "" : " (" + h.unit + ")", h.size(),
                     Step(h.step_seconds), When(h.start_seconds, h.wall_clock), h.size() - observed,
                     observed ? sum / observed : 0.0, peak);
  if (!h.wall_clock) {
    out += "          (times are offsets from the run's start: the daily phase is arbitrary)\n";
  }
  out += fmt::format("forecast  {} for {} ({} steps): {}\n", f.model,
                     Step(f.step_seconds * static_cast<double>(f.point.size())), f.point.size(),
                     f.description);
  const size_t horizon = f.point.size();
  std::string head = fmt::format("\n  {:<20} {:>10}", "time", "median");
  for (double q : f.quantile_levels) head += fmt::format(" {:>10}", "q" + LevelKey(q));
  const bool per_step = horizon <= 48;
  const size_t per_row =
      per_step ? 1 : std::max<size_t>(1, static_cast<size_t>(std::llround(86400 / f.step_seconds)));
  if (!per_step) {
    out += fmt::format(
        "\n  per day: the mean of the median, and each quantile's highest step "
        "(the day's peak at that level)");
  }
  out += head + "\n";
  for (size_t start = 0; start < horizon; start += per_row) {
    const size_t end = std::min(horizon, start + per_row);
    double mean = 0;
    for (size_t i = start; i < end; ++i) mean += f.point[i];
    mean /= static_cast<double>(end - start);
    const double t = f.start_seconds + f.step_seconds * static_cast<double>(start);
    std::string row =
        fmt::format("  {:<20} {:>10.4g}",
                    per_step || !h.wall_clock ? When(t, h.wall_clock) : fleet::FormatDate(t), mean);
    for (const auto& q : f.quantiles) {
      row +=
          fmt::format(" {:>10.4g}",
                      per_step ? q[start] : *std::max_element(q.begin() + start, q.begin() + end));
    }
    out += row + "\n";
  }
  return out;
}

}  // namespace titan::plan
