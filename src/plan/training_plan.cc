#include "src/plan/training_plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "src/plan/forecast.h"
#include "src/sim/engine.h"
#include "src/sim/failure_model.h"
#include "src/sim/formulas.h"

namespace titan::plan {

namespace {

constexpr double kDay = 86400;
constexpr double kInf = std::numeric_limits<double>::infinity();
// A run that has not finished by this many deadlines is stopped (it missed anyway).
constexpr double kHorizonDeadlines = 3;

double QuantileOf(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * v.size())) - (q > 0));
  return v[i];
}

class Search {
 public:
  Search(const TrainingJob& job, const FleetFailures& fleet, const TrainingOptions& options)
      : job_(job), fleet_(fleet), options_(options) {
    replica_gpus_ = job.tensor_parallel * job.pipeline_parallel;
    unit_gpus_ = std::lcm(replica_gpus_, job.gpus_per_node);
    reference_gpus_ =
        job.reference_gpus > 0 ? job.reference_gpus : std::lcm(replica_gpus_, job.gpus_per_node);
    for (const sim::FailureCause& c : fleet.causes) {
      node_rate_ += c.per_node_second;
      if (c.needs_repair) hardware_rate_ += c.per_node_second;
    }
    const int strata = std::isinf(fleet.dispersion_k) || fleet.dispersion_k <= 0
                           ? 1
                           : std::max(1, options.rate_strata);
    for (int i = 0; i < strata; ++i) {
      multipliers_.push_back(
          strata == 1 ? 1.0 : GammaMeanOneQuantile(fleet.dispersion_k, (i + 0.5) / strata));
    }
  }

  int64_t unit_gpus() const { return unit_gpus_; }
  int64_t replica_gpus() const { return replica_gpus_; }
  int points() const { return points_; }
  const std::vector<double>& multipliers() const { return multipliers_; }
  double node_rate() const { return node_rate_; }

  // Failure-free compute seconds at `gpus`.
  double ComputeSeconds(int64_t gpus) const {
    const double doublings =
        std::max(0.0, std::log2(static_cast<double>(gpus) / static_cast<double>(reference_gpus_)));
    return job_.work_gpu_seconds /
           (static_cast<double>(gpus) * std::pow(job_.scaling_efficiency, doublings));
  }
  double Stall() const {
    return job_.checkpoint_mode == sim::CheckpointMode::kAsync ? job_.checkpoint_stall_seconds
                                                               : job_.checkpoint_write_seconds;
  }
  double MinimumInterval() const {
    return std::max({1.0, Stall(),
                     job_.checkpoint_mode == sim::CheckpointMode::kAsync
                         ? job_.checkpoint_write_seconds
                         : 0.0});
  }
  double JobMtbf(int64_t gpus) const {
    return 1 / (static_cast<double>(gpus / job_.gpus_per_node) * node_rate_);
  }
  double DalyInterval(int64_t gpus) const {
    return std::max(MinimumInterval(), sim::DalyIntervalSeconds(Stall(), JobMtbf(gpus)));
  }
  // Daly's complete model's expected wall time at Daly's interval.
  double AnalyticWall(int64_t gpus) const {
    const double recovery =
        job_.detection_seconds + job_.restart_seconds + job_.checkpoint_load_seconds;
    return sim::ExpectedWallSeconds(ComputeSeconds(gpus), DalyInterval(gpus), Stall(), recovery,
                                    JobMtbf(gpus));
  }
  // The repair backlog's 99.9% quantile (normal approximation of its Poisson), plus one, at
  // the highest rate stratum (a bad month must not run out of spares).
  int64_t InitialSpares(int64_t gpus) const {
    const double backlog = hardware_rate_ * multipliers_.back() *
                           static_cast<double>(gpus / job_.gpus_per_node) * fleet_.repair_seconds;
    return static_cast<int64_t>(std::ceil(backlog + 3.09 * std::sqrt(backlog))) + 1;
  }

  Result<PlanPoint> Evaluate(int64_t gpus, int64_t spares, double interval, std::string stage,
                             int64_t replicas, uint64_t seed) {
    ++points_;
    PlanPoint p;
    p.gpus = gpus;
    p.spares = spares;
    p.interval_seconds = std::max(interval, MinimumInterval());
    p.stage = std::move(stage);
    std::vector<double> walls, ettrs, gpu_hours;
    double interruptions = 0;
    const int64_t per_stratum =
        std::max<int64_t>(1, replicas / static_cast<int64_t>(multipliers_.size()));
    for (size_t i = 0; i < multipliers_.size(); ++i) {
      sim::EngineModel m;
      m.nodes = gpus / job_.gpus_per_node;
      m.spares = spares;
      m.replicas_total = gpus / replica_gpus_;
      m.replicas_per_node =
          static_cast<double>(job_.gpus_per_node) / static_cast<double>(replica_gpus_);
      m.repair_seconds = fleet_.repair_seconds;
      m.causes = fleet_.causes;
      for (sim::FailureCause& c : m.causes) c.per_node_second *= multipliers_[i];
      m.clocks = sim::FailureClocks(m.causes);
      m.checkpoint.mode = job_.checkpoint_mode;
      m.checkpoint.interval = sim::IntervalPolicy::kFixed;
      m.checkpoint.interval_seconds = p.interval_seconds;
      m.checkpoint.write_seconds = job_.checkpoint_write_seconds;
      m.checkpoint.blocking_seconds = Stall();
      m.checkpoint.load_seconds = job_.checkpoint_load_seconds;
      m.recovery.policy = sim::RecoveryPolicy::kSpares;
      m.recovery.detection_seconds = job_.detection_seconds;
      m.recovery.restart_seconds = job_.restart_seconds;
      m.interval_seconds = p.interval_seconds;
      m.work_seconds = ComputeSeconds(gpus);
      m.horizon_seconds = std::max(kHorizonDeadlines * job_.deadline_seconds, 2 * m.work_seconds);
      TITAN_ASSIGN_OR_RETURN(std::vector<sim::ReplicaResult> runs,
                             sim::RunReplicas(m, seed * 7919 + i, per_stratum, options_.threads));
      for (const sim::ReplicaResult& r : runs) {
        const double wall = r.finished ? r.wall_seconds : kInf;
        walls.push_back(wall);
        ettrs.push_back(r.ledger[sim::Category::kProductive] / r.wall_seconds);
        gpu_hours.push_back(static_cast<double>(gpus + spares * job_.gpus_per_node) *
                            r.wall_seconds / 3600);
        interruptions += static_cast<double>(r.interruptions);
      }
    }
    const double n = static_cast<double>(walls.size());
    p.probability =
        static_cast<double>(std::count_if(walls.begin(), walls.end(),
                                          [&](double w) { return w <= job_.deadline_seconds; })) /
        n;
    double finite = 0, finite_sum = 0;
    for (double w : walls) {
      if (std::isfinite(w)) {
        finite_sum += w;
        ++finite;
      }
    }
    p.wall_days_mean = finite > 0 ? finite_sum / finite / kDay : kInf;
    p.wall_days_at_probability = QuantileOf(walls, job_.probability) / kDay;
    p.ettr_mean = std::accumulate(ettrs.begin(), ettrs.end(), 0.0) / n;
    p.ettr_low = QuantileOf(ettrs, 0.05);
    p.ettr_high = QuantileOf(ettrs, 0.95);
    p.interruptions_mean = interruptions / n;
    p.gpu_hours_mean = std::accumulate(gpu_hours.begin(), gpu_hours.end(), 0.0) / n;
    p.gpu_hours_at_probability = QuantileOf(gpu_hours, job_.probability);
    return p;
  }

 private:
  const TrainingJob& job_;
  const FleetFailures& fleet_;
  const TrainingOptions& options_;
  int64_t replica_gpus_ = 1, unit_gpus_ = 1, reference_gpus_ = 1;
  double node_rate_ = 0, hardware_rate_ = 0;
  std::vector<double> multipliers_;
  int points_ = 0;
};

std::string Days(double days) {
  return std::isfinite(days) ? fmt::format("{:.2f} d", days) : "never";
}

std::string Money(double dollars) {
  if (dollars >= 1e6) return fmt::format("${:.2f}M", dollars / 1e6);
  if (dollars >= 1e3) return fmt::format("${:.1f}k", dollars / 1e3);
  return fmt::format("${:.0f}", dollars);
}

}  // namespace

double GammaMeanOneQuantile(double k, double q) {
  if (std::isinf(k)) return 1;
  const double c = 1 / (9 * k);
  const double x = 1 - c + NormalQuantile(q) * std::sqrt(c);
  return std::max(0.0, x * x * x);
}

Result<TrainingPlan> PlanTraining(const TrainingJob& job, const FleetFailures& fleet,
                                  const TrainingOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  if (!(job.work_gpu_seconds > 0) || !(job.deadline_seconds > 0) ||
      !(job.probability > 0 && job.probability < 1) || job.gpus_per_node < 1 ||
      job.tensor_parallel < 1 || job.pipeline_parallel < 1 ||
      !(job.scaling_efficiency > 0 && job.scaling_efficiency <= 1) ||
      !(job.checkpoint_write_seconds > 0) || fleet.causes.empty() || !(fleet.repair_seconds > 0)) {
    return InvalidArgumentError(
        "a training plan needs positive work, deadline, checkpoint write time and repair time, "
        "a probability in (0, 1), a scaling efficiency in (0, 1] and a failure rate");
  }
  Search search(job, fleet, options);
  TrainingPlan plan;
  plan.replica_gpus = search.replica_gpus();
  plan.unit_gpus = search.unit_gpus();
  plan.rate_multipliers = search.multipliers();
  const int64_t unit = search.unit_gpus();
  const int64_t max_units = job.max_gpus / unit;
  if (max_units < 1) {
    return InvalidArgumentError(fmt::format(
        "--max-gpus {} is below one unit of {} GPUs (whole replicas of {} on whole nodes of {})",
        job.max_gpus, unit, search.replica_gpus(), job.gpus_per_node));
  }
  // 1. The prefilter.
  int64_t start = -1;
  for (int64_t k = 1; k <= max_units; ++k) {
    if (search.AnalyticWall(k * unit) <= job.deadline_seconds) {
      start = k;
      break;
    }
  }
  if (start < 0) {
    double fastest = kInf;
    int64_t fastest_gpus = unit;
    for (int64_t k = 1; k <= max_units; ++k) {
      const double w = search.AnalyticWall(k * unit);
      if (w < fastest) {
        fastest = w;
        fastest_gpus = k * unit;
      }
    }
    return FailedPreconditionError(fmt::format(
        "no size up to --max-gpus {} finishes by the deadline ({}) even on average: Daly's model "
        "gives at best {} at {} GPUs; move the deadline, raise --max-gpus, or make checkpoints "
        "and restarts faster",
        job.max_gpus, Days(job.deadline_seconds / kDay), Days(fastest / kDay), fastest_gpus));
  }
  plan.prefilter_gpus = start * unit;
  plan.prefilter_wall_days = search.AnalyticWall(start * unit) / kDay;

  std::vector<PlanPoint>& seen = plan.evaluated;
  auto evaluate = [&](int64_t k, int64_t spares, double interval,
                      const char* stage) -> Result<PlanPoint> {
    TITAN_ASSIGN_OR_RETURN(PlanPoint p, search.Evaluate(k * unit, spares, interval, stage,
                                                        options.replicas, options.seed));
    seen.push_back(p);
    return p;
  };
  auto passes = [&](const PlanPoint& p) { return p.probability >= job.probability; };
  auto budget_left = [&] { return search.points() < options.max_points; };

  // 2. GPUs: up from the prefilter by 5% steps until the target is met, then bisect.
  int64_t fail = start - 1, pass = -1;
  PlanPoint best;
  for (int64_t k = start; k <= max_units && budget_left();
       k = std::min(max_units, k + std::max<int64_t>(1, k / 20))) {
    TITAN_ASSIGN_OR_RETURN(PlanPoint p, evaluate(k, search.InitialSpares(k * unit),
                                                 search.DalyInterval(k * unit), "gpus"));
    if (passes(p)) {
      pass = k;
      best = p;
      break;
    }
    fail = k;
    best = p;
    if (k == max_units) break;
  }
  auto describe_size = [&](const PlanPoint& p) {
    plan.compute_days_at_best = search.ComputeSeconds(p.gpus) / kDay;
    plan.node_failures_per_day =
        search.node_rate() * static_cast<double>(p.gpus / job.gpus_per_node) * kDay;
  };
  if (pass < 0) {
    plan.best = best;
    describe_size(best);
    plan.verdict = fmt::format(
        "no size up to {} GPUs finishes by the deadline with probability {:.2f} (the best tried "
        "finishes with {:.2f}); move the deadline, raise --max-gpus, or make checkpoints and "
        "restarts faster",
        job.max_gpus, job.probability, best.probability);
    plan.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return plan;
  }
  while (pass - fail > 1 && budget_left()) {
    const int64_t k = fail + (pass - fail) / 2;
    TITAN_ASSIGN_OR_RETURN(PlanPoint p, evaluate(k, search.InitialSpares(k * unit),
                                                 search.DalyInterval(k * unit), "gpus"));
    if (passes(p)) {
      pass = k;
      best = p;
    } else {
      fail = k;
    }
  }
  // 3. Spares: the fewest that keep the target.
  int64_t spares_pass = best.spares, spares_fail = -1;
  while (spares_pass - spares_fail > 1 && budget_left()) {
    const int64_t s = spares_fail + (spares_pass - spares_fail) / 2;
    TITAN_ASSIGN_OR_RETURN(PlanPoint p, evaluate(pass, s, best.interval_seconds, "spares"));
    if (passes(p)) {
      spares_pass = s;
      best = p;
    } else {
      spares_fail = s;
    }
  }
  // 4. The interval: the cheapest that passes; then one replica fewer with it.
  const double daly = search.DalyInterval(pass * unit);
  for (double factor : {0.5, 0.7, 1.4, 2.0}) {
    if (!budget_left()) break;
    TITAN_ASSIGN_OR_RETURN(PlanPoint p, evaluate(pass, best.spares, daly * factor, "interval"));
    if (passes(p) && p.gpu_hours_mean < best.gpu_hours_mean) best = p;
  }
  while (pass > 1 && budget_left()) {
    TITAN_ASSIGN_OR_RETURN(PlanPoint p,
                           evaluate(pass - 1, best.spares, best.interval_seconds, "gpus"));
    if (!passes(p)) break;
    best = p;
    --pass;
  }
  // A last check on fresh random numbers with twice the runs (the search chose on common ones).
  for (int attempt = 0; attempt < 3; ++attempt) {
    TITAN_ASSIGN_OR_RETURN(PlanPoint check,
                           search.Evaluate(best.gpus, best.spares, best.interval_seconds, "check",
                                           2 * options.replicas, options.seed + 1000003));
    seen.push_back(check);
    if (passes(check) || best.gpus + unit > job.max_gpus) {
      best = check;
      break;
    }
    best.gpus += unit;  // missed on fresh numbers: one unit more, checked again
  }
  plan.best = best;
  plan.feasible = passes(best);
  describe_size(best);
  plan.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  plan.verdict = plan.feasible
                     ? fmt::format(
                           "{} GPUs + {} spare nodes, checkpoint every {:.1f} min: done by the "
                           "deadline with probability {:.3f}",
                           best.gpus, best.spares, best.interval_seconds / 60, best.probability)
                     : fmt::format(
                           "the plan's final check finished by the deadline with probability "
                           "{:.3f}, below {:.2f}: treat it as marginal",
                           best.probability, job.probability);
  return plan;
}

nlohmann::json TrainingPlanJson(const TrainingJob& job, const FleetFailures& fleet,
                                const TrainingPlan& plan) {
  auto point = [&](const PlanPoint& p) {
    nlohmann::json j = {
        {"gpus", p.gpus},
        {"spare_nodes", p.spares},
        {"checkpoint_interval_seconds", p.interval_seconds},
        {"probability", p.probability},
        {"wall_days_mean", std::isfinite(p.wall_days_mean) ? p.wall_days_mean : -1},
        {"wall_days_at_probability",
         std::isfinite(p.wall_days_at_probability) ? p.wall_days_at_probability : -1},
        {"ettr", {{"mean", p.ettr_mean}, {"p5", p.ettr_low}, {"p95", p.ettr_high}}},
        {"interruptions_mean", p.interruptions_mean},
        {"gpu_hours_mean", p.gpu_hours_mean},
        {"gpu_hours_at_probability", p.gpu_hours_at_probability},
        {"stage", p.stage}};
    if (job.price_per_gpu_hour > 0) {
      j["cost_mean"] = p.gpu_hours_mean * job.price_per_gpu_hour;
      j["cost_at_probability"] = p.gpu_hours_at_probability * job.price_per_gpu_hour;
    }
    return j;
  };
  nlohmann::json evaluated = nlohmann::json::array();
  for (const PlanPoint& p : plan.evaluated) evaluated.push_back(point(p));
  nlohmann::json causes = nlohmann::json::array();
  for (const sim::FailureCause& c : fleet.causes) {
    causes.push_back({{"name", c.name},
                      {"per_node_day", c.per_node_second * kDay},
                      {"needs_repair", c.needs_repair}});
  }
  return {{"kind", "titan.plan.training"},
          {"feasible", plan.feasible},
          {"verdict", plan.verdict},
          {"plan", point(plan.best)},
          {"deadline_days", job.deadline_seconds / kDay},
          {"probability_target", job.probability},
          {"replica_gpus", plan.replica_gpus},
          {"unit_gpus", plan.unit_gpus},
          {"compute_days", plan.compute_days_at_best},
          {"node_failures_per_day", plan.node_failures_per_day},
          {"prefilter", {{"gpus", plan.prefilter_gpus}, {"wall_days", plan.prefilter_wall_days}}},
          {"fleet",
           {{"source", fleet.source},
            {"causes", causes},
            {"repair_hours", fleet.repair_seconds / 3600},
            {"dispersion_k", std::isinf(fleet.dispersion_k) ? -1 : fleet.dispersion_k},
            {"rate_multipliers", plan.rate_multipliers}}},
          {"measured_ettr", job.measured_ettr},
          {"evaluated", evaluated},
          {"simulated_points", plan.evaluated.size()},
          {"seconds", plan.seconds}};
}

std::string FormatTrainingPlan(const TrainingJob& job, const FleetFailures& fleet,
                               const TrainingPlan& plan) {
  std::string out;
  const PlanPoint& b = plan.best;
  double rate = 0;
  for (const sim::FailureCause& c : fleet.causes) rate += c.per_node_second;
  out += fmt::format("fleet     {}: {:.3g} failures per 1,000 node-days{}, repair {:.1f} h; {}\n",
                     fleet.source, rate * kDay * 1000, "", fleet.repair_seconds / 3600,
                     std::isinf(fleet.dispersion_k)
                         ? std::string("Poisson (no extra variation in its history)")
                         : fmt::format("rate uncertain beyond Poisson (NB k {:.3g}: {} strata x{})",
                                       fleet.dispersion_k, plan.rate_multipliers.size(), [&] {
                                         std::string m;
                                         for (double x : plan.rate_multipliers) {
                                           m += fmt::format("{}{:.2f}", m.empty() ? "" : "/", x);
                                         }
                                         return m;
                                       }()));
  out += fmt::format(
      "job       {:.4g} GPU-hours of compute at reference scale; replicas of {} GPUs (tp x pp), "
      "{} per node; deadline {} with probability {:.2f}\n",
      job.work_gpu_seconds / 3600, plan.replica_gpus, job.gpus_per_node,
      Days(job.deadline_seconds / kDay), job.probability);
  out += fmt::format("prefilter Daly's model first meets the deadline at {} GPUs (expected {})\n",
                     plan.prefilter_gpus, Days(plan.prefilter_wall_days));
  out += fmt::format(
      "search    {} candidates simulated ({} runs each, titan sim's engine) in "
      "{:.1f} s\n\n",
      plan.evaluated.size(), "200+", plan.seconds);
  out += fmt::format("  {:>7} {:>7} {:>9} {:>8} {:>10} {:>10} {:>17}  {}\n", "gpus", "spares",
                     "ckpt_min", "P(done)", "wall_mean", "wall_p", "ettr [p5, p95]", "stage");
  for (const PlanPoint& p : plan.evaluated) {
    out += fmt::format(
        "  {:>7} {:>7} {:>9.1f} {:>8.3f} {:>10} {:>10} {:>6.2f}% [{:.1f}, {:.1f}]  {}\n", p.gpus,
        p.spares, p.interval_seconds / 60, p.probability, Days(p.wall_days_mean),
        Days(p.wall_days_at_probability), 100 * p.ettr_mean, 100 * p.ettr_low, 100 * p.ettr_high,
        p.stage);
  }
  out += fmt::format("\nplan      {}\n", plan.verdict);
  out += fmt::format(
      "          {} GPUs ({} replicas) + {} spare nodes; checkpoint every {:.1f} min of compute\n",
      b.gpus, b.gpus / plan.replica_gpus, b.spares, b.interval_seconds / 60);
  out += fmt::format(
      "          compute {} without failures; {:.2f} node failures a day; {:.0f} interruptions "
      "expected\n",
      Days(plan.compute_days_at_best), plan.node_failures_per_day, b.interruptions_mean);
  out += fmt::format("          wall time {} on average, {} at probability {:.2f}\n",
                     Days(b.wall_days_mean), Days(b.wall_days_at_probability), job.probability);
  out += fmt::format("          ETTR {:.2f}% (90% of runs within [{:.2f}%, {:.2f}%])\n",
                     100 * b.ettr_mean, 100 * b.ettr_low, 100 * b.ettr_high);
  if (job.measured_ettr > 0) {
    out += fmt::format("          (titan run measured ETTR {:.2f}% on this job so far)\n",
                       100 * job.measured_ettr);
  }
  out += fmt::format("          {:.4g} GPU-hours on average, {:.4g} at probability {:.2f}",
                     b.gpu_hours_mean, b.gpu_hours_at_probability, job.probability);
  if (job.price_per_gpu_hour > 0) {
    out += fmt::format(": {} expected, {} at probability {:.2f}",
                       Money(b.gpu_hours_mean * job.price_per_gpu_hour),
                       Money(b.gpu_hours_at_probability * job.price_per_gpu_hour), job.probability);
  }
  out += "\n";
  return out;
}

}  // namespace titan::plan
