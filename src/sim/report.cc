#include "src/sim/report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "src/sim/failure_model.h"

namespace titan::sim {
namespace {

std::string Percent(const Estimate& e) {
  return fmt::format("{:.2f}% ± {:.2f}%", 100 * e.mean, 100 * e.ci95);
}

double Minutes(double seconds) { return seconds / 60; }

std::string IntervalLine(const SimSummary& s) {
  std::string line = fmt::format(
      "{}, stall {:.3g} s; interval {:.1f} min ({})   young {:.1f} min, daly {:.1f} min",
      CheckpointModeName(s.scenario.checkpoint.mode), s.checkpoint_cost_seconds,
      Minutes(s.interval_seconds), IntervalPolicyName(s.scenario.checkpoint.interval),
      Minutes(s.young_seconds), Minutes(s.daly_seconds));
  if (s.searched_seconds > 0)
    line += fmt::format(", searched {:.1f} min", Minutes(s.searched_seconds));
  return line;
}

}  // namespace

std::string FormatTable(const SimSummary& s) {
  const Scenario& sc = s.scenario;
  std::string out = fmt::format("titan sim: {}\n", sc.name);
  out += fmt::format(
      "  cluster        {} GPUs = {} nodes x {}, {} hot spares, repair {:.1f} h, recovery {}; "
      "{} replicas, seed {}\n",
      sc.cluster.gpus, sc.cluster.nodes(), sc.cluster.gpus_per_node, sc.cluster.spares,
      sc.cluster.repair_seconds / kSecondsPerHour, RecoveryPolicyName(sc.recovery.policy),
      sc.run.replicas, sc.run.seed);
  out += fmt::format(
      "  step time      {:.3f} s = (compute {:.3f} + bubble {:.3f} + exposed all-reduce {:.3f}) x "
      "straggler {:.3f}; all-reduce {:.3f} s over {} ranks\n",
      s.step.step_seconds, s.step.compute_seconds, s.step.bubble_seconds,
      s.step.exposed_allreduce_seconds, s.step.straggler_factor, s.step.allreduce_seconds,
      s.step.data_parallel);
  out += fmt::format(
      "  failures       job MTBF {:.2f} h ({:.2f} per day); recovery {:.1f} min "
      "(detect + restart + load)\n",
      s.job_mtbf_seconds / kSecondsPerHour, kSecondsPerDay / s.job_mtbf_seconds,
      Minutes(s.recovery_seconds));
  out += "  checkpoint     " + IntervalLine(s) + "\n";
  out += fmt::format("  ETTR           {}   (Daly's closed form at this interval: {:.2f}%)\n",
                     Percent(s.ettr), 100 * s.analytic_ettr);
  out += "  time lost     ";
  for (size_t c = 1; c < kCategoryCount; ++c) {
    if (CategoryAt(c) == Category::kStartup) continue;  // never counted by sim (see ledger.h)
    out += fmt::format(" {} {:.2f}%", CategoryName(CategoryAt(c)), 100 * s.share[c].mean);
  }
  out += "\n";
  if (sc.job.steps > 0) {
    out += fmt::format(
        "  wall clock     {:.2f} ± {:.2f} days to {} steps ({:.0f}% of replicas "
        "finished)\n",
        s.wall_days.mean, s.wall_days.ci95, sc.job.steps, 100 * s.finished_fraction);
  } else {
    out += fmt::format("  wall clock     {:.2f} days: {:.0f} ± {:.0f} steps\n", s.wall_days.mean,
                       s.steps_done.mean, s.steps_done.ci95);
  }
  out += fmt::format(
      "  efficiency     {:.2f}% of GPU time is useful compute (ETTR x compute / "
      "step)\n",
      100 * s.efficiency);
  out += fmt::format("  interruptions  {:.1f} ± {:.1f} per replica (sd {:.1f}; Poisson: {:.1f})\n",
                     s.interruptions.mean, s.interruptions.ci95, s.interruptions.stddev,
                     std::sqrt(s.interruptions.mean));
  for (const CauseCount& c : s.by_cause) {
    out += fmt::format("    {:<34} {:>9.1f}  {:5.1f}%\n", c.cause, c.count.mean,
                       s.interruptions.mean > 0 ? 100 * c.count.mean / s.interruptions.mean : 0);
  }
  return out;
}

std::string FormatSweepTable(const std::string& key, const std::vector<SweepRow>& rows) {
  const size_t width = std::max<size_t>(10, key.size());
  std::string out = fmt::format(
      "{:>{}} {:>8} {:>7} {:>8} {:>8} {:>8} {:>9} {:>16} {:>7} {:>7} {:>7} {:>9} {:>7} {:>8}\n",
      key, width, "gpus", "spares", "step_s", "comm_s", "mtbf_h", "ckpt_min", "ettr", "lost%",
      "wait%", "degr%", "intr/day", "eff%", "scaling");
  const double base = rows.empty() ? 0 : rows.front().summary.efficiency;
  for (const SweepRow& row : rows) {
    const SimSummary& s = row.summary;
    const double lost = s.share[static_cast<size_t>(Category::kLostWork)].mean;
    const double wait = s.share[static_cast<size_t>(Category::kWaiting)].mean;
    const double degraded = s.share[static_cast<size_t>(Category::kDegraded)].mean;
    out += fmt::format(
        "{:>{}} {:>8} {:>7} {:>8.3f} {:>8.3f} {:>8.2f} {:>9.1f} {:>16} {:>7.2f} {:>7.2f} {:>7.2f} "
        "{:>9.2f} {:>7.2f} {:>8.3f}\n",
        row.value, width, s.scenario.cluster.gpus, s.scenario.cluster.spares, s.step.step_seconds,
        s.step.exposed_allreduce_seconds, s.job_mtbf_seconds / kSecondsPerHour,
        Minutes(s.interval_seconds), Percent(s.ettr), 100 * lost, 100 * wait, 100 * degraded,
        s.interruptions.mean / std::max(s.wall_days.mean, 1e-9), 100 * s.efficiency,
        base > 0 ? s.efficiency / base : 0);
  }
  return out;
}

namespace {
nlohmann::json EstimateJson(const Estimate& e) {
  return {{"mean", e.mean}, {"ci95", e.ci95}, {"stddev", e.stddev}};
}
}  // namespace

nlohmann::json SummaryJson(const SimSummary& s) {
  const Scenario& sc = s.scenario;
  nlohmann::json shares = nlohmann::json::object();
  for (size_t c = 0; c < kCategoryCount; ++c)
    shares[CategoryName(CategoryAt(c))] = EstimateJson(s.share[c]);
  nlohmann::json causes = nlohmann::json::array();
  for (const CauseCount& c : s.by_cause) {
    causes.push_back({{"cause", c.cause}, {"count", EstimateJson(c.count)}});
  }
  return {
      {"name", sc.name},
      {"gpus", sc.cluster.gpus},
      {"nodes", sc.cluster.nodes()},
      {"spares", sc.cluster.spares},
      {"replicas", sc.run.replicas},
      {"seed", sc.run.seed},
      {"recovery_policy", RecoveryPolicyName(sc.recovery.policy)},
      {"checkpoint_mode", CheckpointModeName(sc.checkpoint.mode)},
      {"interval_policy", IntervalPolicyName(sc.checkpoint.interval)},
      {"step",
       {{"step_seconds", s.step.step_seconds},
        {"compute_seconds", s.step.compute_seconds},
        {"bubble_seconds", s.step.bubble_seconds},
        {"allreduce_seconds", s.step.allreduce_seconds},
        {"exposed_allreduce_seconds", s.step.exposed_allreduce_seconds},
        {"straggler_factor", s.step.straggler_factor},
        {"data_parallel", s.step.data_parallel}}},
      {"job_mtbf_hours", s.job_mtbf_seconds / kSecondsPerHour},
      {"checkpoint_cost_seconds", s.checkpoint_cost_seconds},
      {"recovery_seconds", s.recovery_seconds},
      {"interval_minutes", s.interval_seconds / 60},
      {"young_minutes", s.young_seconds / 60},
      {"daly_minutes", s.daly_seconds / 60},
      {"searched_minutes", s.searched_seconds / 60},
      {"ettr", EstimateJson(s.ettr)},
      {"analytic_ettr", s.analytic_ettr},
      {"time_share", shares},
      {"wall_days", EstimateJson(s.wall_days)},
      {"steps", EstimateJson(s.steps_done)},
      {"target_steps", sc.job.steps},
      {"finished_fraction", s.finished_fraction},
      {"efficiency", s.efficiency},
      {"interruptions", EstimateJson(s.interruptions)},
      {"interruptions_by_cause", causes},
  };
}

nlohmann::json SweepJson(const std::string& key, const std::vector<SweepRow>& rows) {
  nlohmann::json out = {{"sweep", key}, {"rows", nlohmann::json::array()}};
  for (const SweepRow& row : rows) {
    nlohmann::json item = SummaryJson(row.summary);
    item["value"] = row.value;
    out["rows"].push_back(std::move(item));
  }
  return out;
}

std::string FormatCsv(const std::string& key, const std::vector<SweepRow>& rows) {
  std::string out =
      "name,sweep,value,gpus,nodes,spares,replicas,step_seconds,exposed_allreduce_seconds,"
      "straggler_factor,job_mtbf_hours,checkpoint_cost_seconds,recovery_seconds,"
      "interval_minutes,young_minutes,daly_minutes,searched_minutes,ettr,ettr_ci95,analytic_ettr";
  for (size_t c = 1; c < kCategoryCount; ++c)
    out += fmt::format(",{}_share", CategoryName(CategoryAt(c)));
  out +=
      ",wall_days,wall_days_ci95,steps,finished_fraction,efficiency,interruptions,"
      "interruptions_ci95\n";
  for (const SweepRow& row : rows) {
    const SimSummary& s = row.summary;
    const Scenario& sc = s.scenario;
    out += fmt::format(
        "\"{}\",{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},"
        "{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}",
        sc.name, key, row.value, sc.cluster.gpus, sc.cluster.nodes(), sc.cluster.spares,
        sc.run.replicas, s.step.step_seconds, s.step.exposed_allreduce_seconds,
        s.step.straggler_factor, s.job_mtbf_seconds / kSecondsPerHour, s.checkpoint_cost_seconds,
        s.recovery_seconds, s.interval_seconds / 60, s.young_seconds / 60, s.daly_seconds / 60,
        s.searched_seconds / 60, s.ettr.mean, s.ettr.ci95, s.analytic_ettr);
    for (size_t c = 1; c < kCategoryCount; ++c) out += fmt::format(",{:.6g}", s.share[c].mean);
    out += fmt::format(",{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}\n", s.wall_days.mean,
                       s.wall_days.ci95, s.steps_done.mean, s.finished_fraction, s.efficiency,
                       s.interruptions.mean, s.interruptions.ci95);
  }
  return out;
}

}  // namespace titan::sim
