// Engine: the discrete-event simulation of one training job on a cluster that fails, and the
// parallel Monte Carlo driver over replicas.
//
// Model (docs/sim.md has the long form):
//  - Every node (job nodes and hot spares) carries failure clocks (failure_model.h). A failure
//    of a job node interrupts the job, whatever it is doing; failures of spares only take them
//    away for repair. Hardware failures send the node to repair (exponential, mean
//    cluster.repair_seconds), after which it is a spare with new parts (Weibull clocks renew).
//  - The job alternates compute segments of `interval_seconds` of work and checkpoint stalls
//    (policies.h). Progress is measured in seconds of work at full size.
//  - On a failure, work since the restore point (the last durable checkpoint, or the in-memory
//    one if it survived) is lost; the job then spends the detection latency, takes spares to
//    refill (policy spares), or goes on with fewer data-parallel replicas if at least
//    min_fraction remain (shrink), or waits for repaired nodes; then restarts and loads.
//    A failure during detection or restart starts detection again (Daly's model).
//  - Nodes that come back while the job runs shrunk rejoin at the next checkpoint.
//  - In-flight background persists are lost on a failure.
// A replica ends when the job has done `work_seconds` of work, or at `horizon_seconds`.
// Thread safety: RunReplica is reentrant; RunReplicas runs replicas on its own threads and its
// results do not depend on the thread count (each replica is seeded from (seed, index)).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/sim/failure_model.h"
#include "src/sim/ledger.h"
#include "src/sim/scenario.h"

namespace titan::sim {

// A replica stops after this many failure and repair events. Only failures that cascade get
// there (a Weibull shape below 1 with short repairs: a repaired node is new and fails again at
// once), and such a run would neither end nor stay in bounded memory (its event heap grows).
inline constexpr int64_t kMaxEventsPerReplica = 30'000'000;

struct EngineModel {
  int64_t nodes = 0;  // the job's target size
  int64_t spares = 0;
  int64_t replicas_total = 1;    // data-parallel replicas at full size
  double replicas_per_node = 1;  // gpus_per_node / (tp * pp); below 1 when a replica spans nodes
  double repair_seconds = 0;
  std::vector<FailureCause> causes;
  FailureClocks clocks;
  CheckpointSpec checkpoint;
  RecoverySpec recovery;
  double interval_seconds = 0;  // work between checkpoints
  double work_seconds = 0;      // work to finish; 0: run to the horizon
  double horizon_seconds = 0;
  int64_t max_events = kMaxEventsPerReplica;  // per replica; tests lower it
};

// Builds the model of `scenario` with a given checkpoint interval and step time.
EngineModel MakeEngineModel(const Scenario& scenario, double interval_seconds, double step_seconds);

struct ReplicaResult {
  Ledger ledger;  // seconds by category; sums to wall_seconds
  double wall_seconds = 0;
  double work_seconds = 0;                 // kept work at the end
  bool finished = false;                   // reached work_seconds (when set)
  std::vector<int64_t> failures_by_cause;  // failures of job nodes
  int64_t interruptions = 0;               // sum of failures_by_cause
  int64_t checkpoints = 0;
  bool cascaded = false;  // stopped at kMaxEventsPerReplica; the ledger is incomplete
};

ReplicaResult RunReplica(const EngineModel& model, uint64_t seed, uint64_t index);

// Replicas 0..count-1 on `threads` threads (0: hardware concurrency), in index order.
// FAILED_PRECONDITION, saying what to change, when a replica cascaded (the others stop early).
Result<std::vector<ReplicaResult>> RunReplicas(const EngineModel& model, uint64_t seed,
                                               int64_t count, int64_t threads);

}  // namespace titan::sim
