// Job model: the time of one synchronous training step at a given scale.
//
//   step = (compute + pipeline bubble + (1 - overlap) * all-reduce) * straggler factor
//
// - compute: job.compute_seconds at job.reference_gpus; with strong scaling (global batch fixed)
//   it shrinks as reference_gpus / gpus, with weak scaling it stays.
// - pipeline bubble (1F1B / GPipe): compute * (pp - 1) / microbatches.
// - all-reduce of the gradient shard (model_gradient_bytes / (tp * pp)) over the
//   n = gpus / (tp * pp) data-parallel ranks, alpha-beta model. Ring: 2 (n - 1) messages of
//   latency alpha, and each rank moves 2 (n - 1) / n of the buffer, so with bus bandwidth B as
//   nccl-tests defines it (busbw = algbw * 2 (n - 1) / n) the transfer takes S * 2 (n - 1) / n / B.
//   Tree: 2 log2(n) latencies, same bandwidth term. Tensor-parallel traffic is assumed inside
//   compute (NVLink, within a node); pipeline sends are ignored.
// - stragglers: each node is slow by straggler_slowdown in a step with straggler_probability;
//   one slow node slows its whole synchronous group (here the whole job), so the expected factor
//   is 1 + (slowdown - 1) * (1 - (1 - p)^nodes).
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "src/sim/scenario.h"

namespace titan::sim {

struct StepTime {
  int64_t data_parallel = 1;   // ranks in the gradient all-reduce
  double compute_seconds = 0;  // at this scale
  double bubble_seconds = 0;
  double allreduce_seconds = 0;          // whole collective
  double exposed_allreduce_seconds = 0;  // not hidden under compute
  double straggler_factor = 1;
  double step_seconds = 0;  // what one step takes
};

// Seconds for an all-reduce of `bytes` over `ranks` ranks (0 for one rank).
double AllReduceSeconds(AllReduceAlgorithm algorithm, double bytes, int64_t ranks,
                        double alpha_seconds, double bus_bandwidth_bytes_per_second);

StepTime ComputeStepTime(const JobSpec& job, int64_t gpus, int64_t gpus_per_node);

}  // namespace titan::sim
