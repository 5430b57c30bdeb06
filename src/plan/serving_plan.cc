#include "src/plan/serving_plan.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "src/base/duration.h"
#include "src/fleet/time_text.h"
#include "src/plan/failure_fit.h"

namespace titan::plan {

Result<ServingPlan> PlanServing(const Forecast& peak, const Forecast& mean, const std::string& unit,
                                const Capacity& capacity, const ServingOptions& options) {
  auto level = std::find_if(peak.quantile_levels.begin(), peak.quantile_levels.end(),
                            [&](double q) { return std::fabs(q - options.quantile) < 1e-12; });
  if (level == peak.quantile_levels.end()) {
    return InvalidArgumentError(
        fmt::format("the peak forecast has no {} quantile", options.quantile));
  }
  const std::vector<double>& peaks = peak.quantiles[level - peak.quantile_levels.begin()];
  ServingPlan plan;
  const bool tokens = unit.find("tokens") != std::string::npos;
  plan.unit = tokens ? unit : "requests/s";
  plan.capacity_per_replica =
      tokens ? capacity.goodput_rps * capacity.tokens_per_request : capacity.goodput_rps;
  if (!(plan.capacity_per_replica > 0)) {
    return InvalidArgumentError(
        "the replica's capacity is 0 (a demand in tokens needs the sweep's token counts)");
  }
  const double down_rate = options.replica_failures_per_day / 86400 * options.restart_seconds;
  double replica_sum = 0, utilisation_sum = 0, cost_sum = 0;
  const size_t n = std::min(peaks.size(), mean.point.size());
  for (size_t h = 0; h < n; ++h) {
    ServingStep s;
    s.time_seconds = peak.start_seconds + peak.step_seconds * static_cast<double>(h);
    s.peak_demand = std::max(0.0, peaks[h]);
    s.mean_demand = std::max(0.0, mean.point[h]);
    s.needed = std::max<int64_t>(
        options.min_replicas,
        static_cast<int64_t>(std::ceil(s.peak_demand / plan.capacity_per_replica - 1e-9)));
    s.spare = down_rate > 0 ? NegativeBinomialQuantile(static_cast<double>(s.needed) * down_rate,
                                                       INFINITY, options.headroom_probability)
                            : 0;
    s.total = s.needed + s.spare;
    s.utilisation = s.mean_demand / (static_cast<double>(s.total) * plan.capacity_per_replica);
    plan.max_replicas = std::max(plan.max_replicas, s.total);
    replica_sum += static_cast<double>(s.total);
    utilisation_sum += s.utilisation;
    const double hours = peak.step_seconds / 3600;
    const double gpu_hours = static_cast<double>(s.total * options.gpus_per_replica) * hours;
    plan.gpu_hours += gpu_hours;
    cost_sum += gpu_hours * options.price_per_gpu_hour;
    const double served = s.mean_demand * peak.step_seconds;  // requests or tokens
    plan.requests += tokens ? served / std::max(capacity.tokens_per_request, 1e-9) : served;
    plan.tokens += tokens ? served : served * capacity.tokens_per_request;
    plan.steps.push_back(s);
  }
  if (n == 0) return InvalidArgumentError("the forecast has no steps");
  plan.mean_replicas = replica_sum / static_cast<double>(n);
  plan.mean_utilisation = utilisation_sum / static_cast<double>(n);
  plan.cost = cost_sum;
  if (plan.cost > 0 && plan.tokens > 0) {
    plan.cost_per_million_tokens = plan.cost / plan.tokens * 1e6;
  }
  const double hours = peak.step_seconds * static_cast<double>(n) / 3600;
  if (plan.cost > 0) {
    plan.qps_per_dollar_hour = plan.requests / (hours * 3600) / (plan.cost / hours);
  }
  return plan;
}

nlohmann::json ServingPlanJson(const ServingPlan& plan, const Capacity& capacity,
                               const ServingOptions& options) {
  nlohmann::json steps = nlohmann::json::array();
  for (const ServingStep& s : plan.steps) {
    steps.push_back({{"time", s.time_seconds},
                     {"peak_demand", s.peak_demand},
                     {"mean_demand", s.mean_demand},
                     {"needed", s.needed},
                     {"spare", s.spare},
                     {"replicas", s.total},
                     {"utilisation", s.utilisation}});
  }
  return {{"kind", "titan.plan.serving"},
          {"unit", plan.unit},
          {"quantile", options.quantile},
          {"capacity",
           {{"slo", capacity.slo},
            {"knee_rate", capacity.knee_rate},
            {"goodput_rps", capacity.goodput_rps},
            {"tokens_per_request", capacity.tokens_per_request},
            {"per_replica", plan.capacity_per_replica}}},
          {"headroom",
           {{"replica_failures_per_day", options.replica_failures_per_day},
            {"restart_seconds", options.restart_seconds},
            {"probability", options.headroom_probability}}},
          {"gpus_per_replica", options.gpus_per_replica},
          {"price_per_gpu_hour", options.price_per_gpu_hour},
          {"max_replicas", plan.max_replicas},
          {"mean_replicas", plan.mean_replicas},
          {"mean_utilisation", plan.mean_utilisation},
          {"gpu_hours", plan.gpu_hours},
          {"cost", plan.cost},
          {"requests", plan.requests},
          {"tokens", plan.tokens},
          {"cost_per_million_tokens", plan.cost_per_million_tokens},
          {"qps_per_dollar_hour", plan.qps_per_dollar_hour},
          {"steps", steps}};
}

std::string FormatServingPlan(const ServingPlan& plan, const Capacity& capacity,
                              const ServingOptions& options, double step_seconds) {
  std::string out = fmt::format(
      "capacity  {:.4g} {} per replica at {} (titan load sweep: knee {:.4g} requests/s offered, "
      "{:.4g} completed/s; {:.0f} tokens per request){}\n",
      plan.capacity_per_replica, plan.unit, capacity.slo, capacity.knee_rate, capacity.goodput_rps,
      capacity.tokens_per_request,
      capacity.first_failing_rate > 0
          ? fmt::format("; {:.4g}/s missed it: {}", capacity.first_failing_rate,
                        capacity.why_next_fails)
          : "");
  out += fmt::format(
      "headroom  {:.3g} failures per replica-day x {:.0f} s restart: spares for {:.1f}% of "
      "steps\n",
      options.replica_failures_per_day, options.restart_seconds,
      100 * options.headroom_probability);
  out += fmt::format("\n  {:<20} {:>12} {:>12} {:>7} {:>6} {:>9} {:>8}\n", "step",
                     fmt::format("peak q{:g}", options.quantile), "mean", "needed", "spare",
                     "replicas", "util");
  const size_t every = plan.steps.size() > 48 ? (plan.steps.size() + 47) / 48 : 1;
  for (size_t i = 0; i < plan.steps.size(); i += every) {
    const ServingStep& s = plan.steps[i];
    out += fmt::format("  {:<20} {:>12.4g} {:>12.4g} {:>7} {:>6} {:>9} {:>7.1f}%\n",
                       fleet::FormatTime(s.time_seconds), s.peak_demand, s.mean_demand, s.needed,
                       s.spare, s.total, 100 * s.utilisation);
  }
  if (every > 1) out += fmt::format("  (one step in {} shown; --json has all)\n", every);
  out += fmt::format(
      "\nplan      {} replicas at most, {:.1f} on average ({} GPUs each) over {}; utilisation "
      "{:.1f}%\n",
      plan.max_replicas, plan.mean_replicas, options.gpus_per_replica,
      FormatDurationShort(static_cast<int64_t>(step_seconds * plan.steps.size() * 1e9)),
      100 * plan.mean_utilisation);
  out += fmt::format("          {:.4g} GPU-hours; {:.4g} requests and {:.4g} tokens served",
                     plan.gpu_hours, plan.requests, plan.tokens);
  if (plan.cost > 0) {
    out += fmt::format(
        "\ncost      ${:.2f} at ${:.2f}/GPU-hour: ${:.4g} per 1M tokens, {:.4g} requests/s per "
        "$/hour",
        plan.cost, options.price_per_gpu_hour, plan.cost_per_million_tokens,
        plan.qps_per_dollar_hour);
  }
  out += "\n";
  return out;
}

}  // namespace titan::plan
