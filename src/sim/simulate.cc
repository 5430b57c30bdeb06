#include "src/sim/simulate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "src/base/text.h"
#include "src/sim/failure_model.h"
#include "src/sim/formulas.h"
#include "src/sim/policies.h"
#include "src/sim/scenario_text.h"

namespace titan::sim {
namespace {

constexpr double kMaxCheckpointsPerReplica = 1e8;

// What the interval search maximises: work per wall second (ETTR in horizon mode; in steps
// mode the same, as the work is fixed).
double MeanEttr(const std::vector<ReplicaResult>& results) {
  double sum = 0;
  for (const ReplicaResult& r : results) sum += r.ledger[Category::kProductive] / r.wall_seconds;
  return sum / static_cast<double>(results.size());
}

// Searches the interval on a log grid around Young's value, all candidates on the same seeds
// (common random numbers make the comparison far less noisy), then fits a parabola through the
// best point and its neighbours.
Result<double> SearchInterval(const Scenario& s, double step_seconds, double young,
                              double minimum) {
  const std::vector<double> candidates = IntervalCandidates(young, minimum, 17);
  const int64_t replicas = std::min<int64_t>(s.run.replicas, 200);
  std::vector<double> scores;
  for (double interval : candidates) {
    const EngineModel model = MakeEngineModel(s, interval, step_seconds);
    TITAN_ASSIGN_OR_RETURN(std::vector<ReplicaResult> results,
                           RunReplicas(model, s.run.seed, replicas, s.run.threads));
    scores.push_back(MeanEttr(results));
  }
  const size_t best = std::max_element(scores.begin(), scores.end()) - scores.begin();
  if (best == 0 || best + 1 == scores.size()) return candidates[best];
  const double x0 = std::log(candidates[best - 1]), x1 = std::log(candidates[best]),
               x2 = std::log(candidates[best + 1]);
  const double y0 = scores[best - 1], y1 = scores[best], y2 = scores[best + 1];
  const double denominator = (x0 - x1) * (x0 - x2) * (x1 - x2);
  const double a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / denominator;
  const double b = (x2 * x2 * (y0 - y1) + x1 * x1 * (y2 - y0) + x0 * x0 * (y1 - y2)) / denominator;
  if (!(a < 0)) return candidates[best];
  const double x = std::clamp(-b / (2 * a), x0, x2);
  return std::exp(x);
}

}  // namespace

SimSummary Summarize(const Scenario& scenario, const StepTime& step, double interval_seconds,
                     const std::vector<ReplicaResult>& results) {
  SimSummary out;
  out.scenario = scenario;
  out.step = step;
  out.interval_seconds = interval_seconds;
  out.job_mtbf_seconds = JobMtbfSeconds(scenario.causes, scenario.cluster.nodes());
  out.checkpoint_cost_seconds = MeanCheckpointBlockingSeconds(scenario.checkpoint);
  out.recovery_seconds = RecoverySeconds(scenario.recovery, scenario.checkpoint);
  out.young_seconds = YoungIntervalSeconds(out.checkpoint_cost_seconds, out.job_mtbf_seconds);
  out.daly_seconds = DalyIntervalSeconds(out.checkpoint_cost_seconds, out.job_mtbf_seconds);
  out.analytic_ettr = ExpectedEttr(interval_seconds, out.checkpoint_cost_seconds,
                                   out.recovery_seconds, out.job_mtbf_seconds);
  const size_t n = results.size();
  std::vector<double> values(n);
  auto estimate = [&](auto&& f) {
    for (size_t i = 0; i < n; ++i) values[i] = f(results[i]);
    return Estimate95(values);
  };
  out.ettr = estimate(
      [](const ReplicaResult& r) { return r.ledger[Category::kProductive] / r.wall_seconds; });
  for (size_t c = 0; c < kCategoryCount; ++c) {
    out.share[c] =
        estimate([c](const ReplicaResult& r) { return r.ledger.seconds[c] / r.wall_seconds; });
  }
  out.wall_days = estimate([](const ReplicaResult& r) { return r.wall_seconds / kSecondsPerDay; });
  out.steps_done =
      estimate([&](const ReplicaResult& r) { return r.work_seconds / step.step_seconds; });
  out.interruptions =
      estimate([](const ReplicaResult& r) { return static_cast<double>(r.interruptions); });
  for (size_t c = 0; c < scenario.causes.size(); ++c) {
    out.by_cause.push_back({scenario.causes[c].name, estimate([c](const ReplicaResult& r) {
                              return static_cast<double>(r.failures_by_cause[c]);
                            })});
  }
  double finished = 0;
  for (const ReplicaResult& r : results) finished += r.finished;
  out.finished_fraction = n == 0 ? 0 : finished / static_cast<double>(n);
  out.efficiency = out.ettr.mean * step.compute_seconds / step.step_seconds;
  return out;
}

Result<SimSummary> Simulate(const Scenario& s) {
  const StepTime step = ComputeStepTime(s.job, s.cluster.gpus, s.cluster.gpus_per_node);
  const double mtbf = JobMtbfSeconds(s.causes, s.cluster.nodes());
  const double delta = MeanCheckpointBlockingSeconds(s.checkpoint);
  // An interval must outlast the stall (Young's and Daly's values do whenever delta < M / 2),
  // and an async write must end before the next one starts.
  const double minimum = std::max(
      {delta, 1.0, s.checkpoint.mode == CheckpointMode::kAsync ? s.checkpoint.write_seconds : 0.0});
  double interval = 0, searched = 0;
  switch (s.checkpoint.interval) {
    case IntervalPolicy::kFixed:
      interval = s.checkpoint.interval_seconds;
      break;
    case IntervalPolicy::kYoung:
      interval = YoungIntervalSeconds(delta, mtbf);
      break;
    case IntervalPolicy::kDaly:
      interval = DalyIntervalSeconds(delta, mtbf);
      break;
    case IntervalPolicy::kSearched:
      TITAN_ASSIGN_OR_RETURN(
          searched, SearchInterval(s, step.step_seconds,
                                   YoungIntervalSeconds(std::max(delta, 1.0), mtbf), minimum));
      interval = searched;
      break;
  }
  if (!(interval > 0) || !std::isfinite(interval)) {
    return InvalidArgumentError(fmt::format(
        "scenario: checkpoint.interval: the {} interval works out to {:g} s (checkpoint stall "
        "{:g} s, job MTBF {:g} s); give checkpoint.interval_minutes with interval: fixed",
        IntervalPolicyName(s.checkpoint.interval), interval, delta, mtbf));
  }
  interval = std::max(interval, minimum);
  const double span = s.job.steps > 0 ? s.run.max_seconds : s.run.duration_seconds;
  if (span / interval > kMaxCheckpointsPerReplica) {
    return InvalidArgumentError(fmt::format(
        "scenario: checkpoint.interval: {:g} s gives up to {:.3g} checkpoints per replica (at "
        "most {:g}); lengthen checkpoint.interval_minutes or shorten run.max_days",
        interval, span / interval, kMaxCheckpointsPerReplica));
  }
  const EngineModel model = MakeEngineModel(s, interval, step.step_seconds);
  TITAN_ASSIGN_OR_RETURN(std::vector<ReplicaResult> results,
                         RunReplicas(model, s.run.seed, s.run.replicas, s.run.threads));
  SimSummary summary = Summarize(s, step, interval, std::move(results));
  summary.searched_seconds = searched;
  return summary;
}

Result<std::vector<SweepRow>> Sweep(const nlohmann::json& tree, const std::string& key,
                                    const std::vector<std::string>& values) {
  Scenario base;
  if (key == "gpus") {  // the base size scales spares and pins the reference size
    Result<Scenario> parsed = ParseScenario(tree);
    if (!parsed.ok()) return parsed.status();
    base = *std::move(parsed);
  }
  std::vector<SweepRow> rows;
  for (const std::string& value : values) {
    nlohmann::json point = tree;
    if (key == "gpus") {
      int64_t gpus = 0;
      if (!ParseInt64(value, &gpus) || gpus <= 0) {
        return InvalidArgumentError(
            fmt::format("--sweep gpus: '{}' is not a positive whole number", value));
      }
      TITAN_RETURN_IF_ERROR(SetTreePath(&point, "cluster.gpus", value));
      const double scaled = std::round(static_cast<double>(base.cluster.spares) *
                                       static_cast<double>(gpus) / base.cluster.gpus);
      TITAN_RETURN_IF_ERROR(SetTreePath(&point, "cluster.spares", fmt::format("{:.0f}", scaled)));
      TITAN_RETURN_IF_ERROR(
          SetTreePath(&point, "job.reference_gpus", fmt::format("{}", base.job.reference_gpus)));
    } else if (key == "interval_minutes" || key == "checkpoint.interval_minutes") {
      TITAN_RETURN_IF_ERROR(SetTreePath(&point, "checkpoint.interval", "fixed"));
      TITAN_RETURN_IF_ERROR(SetTreePath(&point, "checkpoint.interval_minutes", value));
    } else {
      TITAN_RETURN_IF_ERROR(SetTreePath(&point, key == "spares" ? "cluster.spares" : key, value));
    }
    Result<Scenario> scenario = ParseScenario(point);
    if (!scenario.ok()) {
      return scenario.status().WithContext(fmt::format("--sweep {}={}", key, value));
    }
    TITAN_ASSIGN_OR_RETURN(SimSummary summary, Simulate(*scenario));
    rows.push_back({value, std::move(summary)});
  }
  return rows;
}

}  // namespace titan::sim
