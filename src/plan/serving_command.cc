// `titan plan serving`: a demand series + a titan load sweep -> replicas per step and cost.
#include "src/plan/serving_command.h"

#include <cerrno>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "src/base/atomic_file.h"
#include "src/base/command_line.h"
#include "src/base/duration_option.h"
#include "src/plan/capacity.h"
#include "src/plan/command_support.h"
#include "src/plan/serving_plan.h"

namespace titan::plan {

int ServingCommand(int argc, char** argv) {
  CLI::App app{
      "titan plan serving: replicas per step for the forecast's chosen quantile of each step's\n"
      "peak demand, from one replica's goodput at the SLO that titan load sweep measured, with\n"
      "headroom for replicas that fail and restart; utilisation and cost.\n\n"
      "Examples:\n"
      "  titan plan serving --demand requests.csv --capacity sweep.json --horizon 7d --price 2.5\n"
      "  titan plan serving --demand access.jsonl --capacity sweep.json --slo p99_ttft=1s \\\n"
      "      --step 1h --resolution 1m --quantile 0.95 --replica-failures-per-day 0.1\n",
      "titan plan serving"};
  SeriesFlags series;
  series.aggregate = "max";
  std::string capacity_path, slo, model = "titan", json_path;
  int64_t horizon_ns = 7 * kDayNs, restart_ns = 5 * 60 * kSecondNs;
  ServingOptions options;
  app.add_option("--demand", series.source,
                 "Demand series (requests/s or tokens/s; titan plan demand's formats)")
      ->required();
  app.add_option("--capacity", capacity_path, "titan load sweep --json of one replica")->required();
  AddSeriesFlags(app, &series);
  app.add_option("--slo", slo, "SLO gates (titan load's syntax; default: the sweep's)");
  AddDurationOption(app, "--horizon", &horizon_ns, "How far ahead to plan", kSecondNs,
                    3650 * kDayNs);
  app.add_option("--quantile", options.quantile, "Quantile of each step's peak to provision for")
      ->check(CLI::Range(0.5, 0.999));
  app.add_option("--replica-failures-per-day", options.replica_failures_per_day,
                 "Failures per replica per day (crashes, hangs, node losses)");
  AddDurationOption(app, "--restart", &restart_ns, "A failed replica's time to serve again", 0,
                    kDayNs);
  app.add_option("--headroom", options.headroom_probability,
                 "Probability that spares cover the replicas down at once")
      ->check(CLI::Range(0.5, 0.99999));
  app.add_option("--gpus-per-replica", options.gpus_per_replica, "GPUs per replica")
      ->check(CLI::Range(1, 4096));
  app.add_option("--min-replicas", options.min_replicas, "Fewest replicas at any step")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--price", options.price_per_gpu_hour, "Price per GPU-hour");
  app.add_option("--model", model, "Forecast model: " + ForecasterNames());
  app.add_option("--json", json_path, "Write the plan as JSON ('-': stdout)");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  options.restart_seconds = static_cast<double>(restart_ns) / 1e9;

  std::ifstream in(capacity_path, std::ios::binary);
  if (!in) return Fail(ErrnoError(errno, fmt::format("opening {}", capacity_path)));
  std::ostringstream text;
  text << in.rdbuf();
  auto capacity = ReadCapacity(text.str(), capacity_path, slo);
  if (!capacity.ok()) return Fail(capacity.status());

  // Each step's peak (the --aggregate, max by default) and its mean, forecast alike.
  auto peaks = LoadSeries(series);
  if (!peaks.ok()) return Fail(peaks.status());
  SeriesFlags mean_flags = series;
  mean_flags.aggregate = "mean";
  auto means = LoadSeries(mean_flags);
  if (!means.ok()) return Fail(means.status());
  auto forecaster = MakeForecaster(model);
  if (forecaster == nullptr) {
    return Fail(InvalidArgumentError(
        fmt::format("--model {}: the models are {}", model, ForecasterNames())));
  }
  const int64_t steps = std::max<int64_t>(1, horizon_ns / series.step_ns);
  auto peak_forecast = forecaster->Predict(*peaks, steps, {0.5, options.quantile});
  if (!peak_forecast.ok()) return Fail(peak_forecast.status().WithContext("the peak demand"));
  auto mean_forecast = forecaster->Predict(*means, steps, {0.5});
  if (!mean_forecast.ok()) return Fail(mean_forecast.status().WithContext("the mean demand"));
  auto plan = PlanServing(*peak_forecast, *mean_forecast, peaks->unit, *capacity, options);
  if (!plan.ok()) return Fail(plan.status());
  if (!json_path.empty()) {
    nlohmann::json out = ServingPlanJson(*plan, *capacity, options);
    out["demand"] = {{"name", peaks->name}, {"forecast", peak_forecast->description}};
    if (Status s = WriteFileAtomically(json_path, out.dump(1) + "\n"); !s.ok()) return Fail(s);
  }
  if (json_path != "-") {
    std::printf("demand    %s (%s): %zu steps of history; peak forecast: %s\n", peaks->name.c_str(),
                plan->unit.c_str(), peaks->size(), peak_forecast->description.c_str());
    std::fputs(FormatServingPlan(*plan, *capacity, options, peaks->step_seconds).c_str(), stdout);
  }
  return 0;
}

}  // namespace titan::plan
