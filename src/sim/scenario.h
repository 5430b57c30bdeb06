// Scenario: everything one `titan sim` run needs, validated. Built from a YAML or JSON document
// (scenario_text.h turns text into a tree; ParseScenario checks every key and range here).
//
// Units are in the names. Rates are per node; a node has `gpus_per_node` GPUs. All numbers in a
// valid Scenario are finite and inside the ranges documented next to each field (the errors
// ParseScenario returns quote these ranges). Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::sim {

enum class Distribution { kExponential, kWeibull };

// One failure process per node (e.g. "GPU HBM3"). Weibull failures renew when a node comes back
// from repair (its parts are new), so a shape < 1 models infant mortality.
struct FailureCause {
  std::string name;
  double per_node_second = 0;  // mean failures per node per second, > 0
  Distribution distribution = Distribution::kExponential;
  double weibull_shape = 1;        // (0.1, 10], only for Weibull
  bool needs_repair = true;        // hardware: the node leaves for repair; software: restart only
  double detection_seconds = -1;   // >= 0 overrides recovery.detection_seconds
  double initial_age_seconds = 0;  // age of every node at time 0 (Weibull only), >= 0
};

struct ClusterSpec {
  int64_t gpus = 0;           // GPUs the job uses, [1, 10^7]
  int64_t gpus_per_node = 8;  // [1, 64]; gpus must be a multiple
  int64_t spares = 0;         // hot spare nodes, [0, job nodes]
  double repair_seconds = 0;  // mean time a failed node is away (exponential), > 0
  int64_t nodes() const { return gpus / gpus_per_node; }
};

enum class AllReduceAlgorithm { kRing, kTree };

struct JobSpec {
  double compute_seconds = 1;   // compute per step at reference_gpus, > 0
  int64_t reference_gpus = 0;   // GPUs at which compute_seconds holds (default: cluster.gpus)
  bool strong_scaling = false;  // strong: global batch fixed, compute/step ~ 1/gpus; weak: fixed
  double model_gradient_bytes = 0;  // gradient bytes of the whole model, >= 0
  int64_t tensor_parallel = 1;
  int64_t pipeline_parallel = 1;
  int64_t microbatches = 1;  // per step, for the pipeline bubble
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kRing;
  double alpha_seconds = 0;                   // per-message latency of the all-reduce, >= 0
  double bus_bandwidth_bytes_per_second = 0;  // nccl-tests "busbw", > 0
  double overlap = 0;                // fraction of the all-reduce hidden under compute, [0, 1]
  double straggler_probability = 0;  // per node per step, [0, 1)
  double straggler_slowdown = 1;     // a slow node's step time factor, [1, 100]
  int64_t steps = 0;                 // steps to finish; 0: run for run.duration_seconds instead
};

enum class CheckpointMode { kSync, kAsync, kInMemory, kIncremental };
enum class IntervalPolicy { kFixed, kYoung, kDaly, kSearched };

struct CheckpointSpec {
  CheckpointMode mode = CheckpointMode::kSync;
  IntervalPolicy interval = IntervalPolicy::kDaly;
  double interval_seconds = 0;      // compute between checkpoints (fixed), > blocking cost
  double write_seconds = 0;         // full checkpoint to storage, > 0
  double blocking_seconds = 0;      // async: the stall to snapshot, [0, write_seconds]
  double memory_seconds = 0;        // in_memory: the stall to copy to peer memory, > 0
  int64_t persist_every = 1;        // in_memory: every k-th snapshot also persisted (async)
  double memory_survival = 1;       // in_memory: P(memory copy survives a failure), [0, 1]
  double incremental_fraction = 1;  // incremental: share written by a delta, (0, 1]
  int64_t full_every = 1;           // incremental: every k-th checkpoint is full
  double load_seconds = 0;          // restore from storage, >= 0
  double memory_load_seconds = 0;   // restore from peer memory, >= 0
};

enum class RecoveryPolicy { kSpares, kShrink, kWait };

struct RecoverySpec {
  RecoveryPolicy policy = RecoveryPolicy::kSpares;
  double detection_seconds = 0;  // failure to decision, >= 0
  double restart_seconds = 0;    // relaunch and initialisation (without loading), >= 0
  double min_fraction = 1;       // shrink: least share of data-parallel replicas to go on, (0, 1]
};

struct RunSpec {
  double duration_seconds = 0;  // horizon without job.steps, > 0
  double max_seconds = 0;       // hard cap of simulated time per replica (never a hang)
  int64_t replicas = 100;       // [1, 10^6]
  uint64_t seed = 1;
  int64_t threads = 0;  // 0: hardware concurrency
};

struct Scenario {
  std::string name;
  ClusterSpec cluster;
  std::vector<FailureCause> causes;
  JobSpec job;
  CheckpointSpec checkpoint;
  RecoverySpec recovery;
  RunSpec run;
};

// Validates `tree` (a JSON object; see docs/sim.md for the schema) into a Scenario. Errors are
// INVALID_ARGUMENT naming the key path ("checkpoint.interval_minutes") and the allowed range.
// Unknown keys are errors. `tree` may have "base: <preset>": then the preset is the starting
// point and `tree` overrides it key by key (JSON merge patch).
Result<Scenario> ParseScenario(const nlohmann::json& tree);

// The names of the enumerations as used in scenario files and reports.
const char* CheckpointModeName(CheckpointMode mode);
const char* IntervalPolicyName(IntervalPolicy policy);
const char* RecoveryPolicyName(RecoveryPolicy policy);

}  // namespace titan::sim
