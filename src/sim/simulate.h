// Simulate: one scenario end to end. Picks the checkpoint interval (fixed, Young, Daly, or
// searched by simulation with common random numbers), runs the Monte Carlo replicas and
// summarises them with 95% confidence intervals next to the closed-form predictions.
// Thread safety: Simulate is reentrant; it runs replicas on scenario.run.threads threads.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/sim/engine.h"
#include "src/sim/job_model.h"
#include "src/sim/ledger.h"
#include "src/sim/scenario.h"

namespace titan::sim {

struct CauseCount {
  std::string cause;
  Estimate count;  // failures of job nodes per replica
};

struct SimSummary {
  Scenario scenario;
  StepTime step;
  double job_mtbf_seconds = 0;         // 1 / (job nodes * per-node rate)
  double checkpoint_cost_seconds = 0;  // mean stall per checkpoint (delta)
  double recovery_seconds = 0;         // detection + restart + load (R)
  double young_seconds = 0;
  double daly_seconds = 0;
  double searched_seconds = 0;                 // 0 unless interval: searched
  double interval_seconds = 0;                 // what the replicas used
  double analytic_ettr = 0;                    // Daly's complete model at interval_seconds
  Estimate ettr;                               // productive / wall
  std::array<Estimate, kCategoryCount> share;  // of wall time, by category
  Estimate wall_days;
  Estimate steps_done;
  Estimate interruptions;
  std::vector<CauseCount> by_cause;
  double finished_fraction = 0;  // replicas that finished job.steps (steps mode)
  double efficiency = 0;         // ETTR * compute / step: useful share of GPU time
};

Result<SimSummary> Simulate(const Scenario& scenario);

// Summarises replica results (exposed for tests).
SimSummary Summarize(const Scenario& scenario, const StepTime& step, double interval_seconds,
                     const std::vector<ReplicaResult>& results);

// One row per value of `key` applied to `tree` with SetTreePath. Key "gpus" sets cluster.gpus,
// scales cluster.spares in proportion and pins job.reference_gpus to the base scenario's;
// "spares" is cluster.spares; "interval_minutes" also sets checkpoint.interval: fixed.
struct SweepRow {
  std::string value;
  SimSummary summary;
};
Result<std::vector<SweepRow>> Sweep(const nlohmann::json& tree, const std::string& key,
                                    const std::vector<std::string>& values);

}  // namespace titan::sim
