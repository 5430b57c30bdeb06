// The training plan: how many GPUs, how many hot spare nodes and which checkpoint interval finish
// a job by its deadline with a chosen probability, at the least cost, on a fleet that fails as
// its history says (failure_fit.h). titan sim's engine (src/sim/engine.h) simulates each
// candidate; an adaptive search keeps the number of candidates small:
//   1. Young/Daly prefilter: for every GPU count (whole replicas of tp x pp GPUs on whole
//      nodes), Daly's complete model gives the expected wall time at Daly's interval; the
//      smallest count whose expected time meets the deadline is where the search starts.
//   2. GPUs: simulated upwards from there until the probability of finishing by the deadline
//      reaches the target, then bisected to one replica.
//   3. Spares: bisected down from the repair backlog's 99.9% Poisson quantile (failed nodes x
//      repair time, Little's law) to the fewest that keep the probability.
//   4. Interval: Daly's x 0.5, 0.7, 1.4, 2 on the same random numbers; the best, and one more
//      try of a replica fewer with it.
// Each candidate is `replicas` Monte Carlo runs of the whole job (common random numbers across
// candidates). The fleet's failure rate is uncertain beyond Poisson (the history's negative
// binomial size k): the runs are split over `rate_strata` multipliers of the rate at quantiles
// of a Gamma(k, 1/k) (the negative binomial's mixing distribution), so a plan that meets the
// target also meets it in a bad month.
//
// Work is GPU-seconds at the reference scale: total FLOPs / achieved FLOP/s per GPU (from an
// MFU, or from a measured step time), or GPU-hours given directly. At N GPUs the job computes
// for work / (N x e^log2(N / reference)) seconds, e being the scaling efficiency per doubling.
//
// Thread safety: PlanTraining runs the engine on options.threads threads; reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/sim/scenario.h"

namespace titan::plan {

struct TrainingJob {
  double work_gpu_seconds = 0;  // compute at reference_gpus' efficiency, > 0
  int64_t tensor_parallel = 1, pipeline_parallel = 1;
  int64_t gpus_per_node = 8;
  int64_t reference_gpus = 0;     // 0: one replica, rounded up to whole nodes
  double scaling_efficiency = 1;  // per doubling of GPUs beyond reference_gpus, (0, 1]
  double deadline_seconds = 0;    // wall-clock time from the start
  double probability = 0.9;       // of finishing by the deadline
  sim::CheckpointMode checkpoint_mode = sim::CheckpointMode::kAsync;
  double checkpoint_write_seconds = 0;  // to storage, > 0
  double checkpoint_stall_seconds = 0;  // async: the snapshot's stall (sync: the write)
  double checkpoint_load_seconds = 0;
  double detection_seconds = 60, restart_seconds = 300;
  int64_t max_gpus = 131072;
  double price_per_gpu_hour = 0;  // 0: no cost shown
  // A measured ETTR (titan run's ledger) to compare the plan with; 0: none.
  double measured_ettr = 0;
};

struct FleetFailures {
  std::vector<sim::FailureCause> causes;  // per node
  double repair_seconds = 0;
  double dispersion_k = 0;  // infinity: Poisson
  std::string source;       // where it came from, for people
};

struct TrainingOptions {
  int64_t replicas = 200;  // per candidate
  int rate_strata = 4;     // rate multipliers (1 when the fleet is Poisson)
  int max_points = 100;    // simulated candidates at most
  uint64_t seed = 1;
  int64_t threads = 0;  // 0: all cores
};

struct PlanPoint {
  int64_t gpus = 0, spares = 0;  // spares in nodes
  double interval_seconds = 0;
  double probability = 0;  // of finishing by the deadline
  double wall_days_mean = 0, wall_days_at_probability = 0;
  double ettr_mean = 0, ettr_low = 0, ettr_high = 0;  // over runs: 5th and 95th percentiles
  double interruptions_mean = 0;
  double gpu_hours_mean = 0, gpu_hours_at_probability = 0;  // spares included
  std::string stage;                                        // which search stage evaluated it
};

struct TrainingPlan {
  bool feasible = false;  // some candidate met the probability
  PlanPoint best;         // the plan (or the best tried, when not feasible)
  std::vector<PlanPoint> evaluated;
  int64_t replica_gpus = 0, unit_gpus = 0;
  int64_t prefilter_gpus = 0;  // where Daly's model met the deadline
  double prefilter_wall_days = 0;
  double compute_days_at_best = 0;   // failure-free compute time at the plan's size
  double node_failures_per_day = 0;  // at the plan's size
  std::vector<double> rate_multipliers;
  double seconds = 0;  // the search's wall time
  std::string verdict;
};

Result<TrainingPlan> PlanTraining(const TrainingJob& job, const FleetFailures& fleet,
                                  const TrainingOptions& options);

nlohmann::json TrainingPlanJson(const TrainingJob& job, const FleetFailures& fleet,
                                const TrainingPlan& plan);
std::string FormatTrainingPlan(const TrainingJob& job, const FleetFailures& fleet,
                               const TrainingPlan& plan);

// Quantile q of Gamma(shape k, scale 1/k) (mean 1) by Wilson and Hilferty's cube-root normal
// approximation, floored at 0.
double GammaMeanOneQuantile(double k, double q);

}  // namespace titan::plan
