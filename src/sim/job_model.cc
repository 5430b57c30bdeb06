#include "src/sim/job_model.h"

#include <cmath>

namespace titan::sim {

double AllReduceSeconds(AllReduceAlgorithm algorithm, double bytes, int64_t ranks,
                        double alpha_seconds, double bus_bandwidth_bytes_per_second) {
  if (ranks <= 1) return 0;
  const double n = static_cast<double>(ranks);
  const double latency = algorithm == AllReduceAlgorithm::kRing
                             ? 2.0 * (n - 1.0) * alpha_seconds
                             : 2.0 * std::ceil(std::log2(n)) * alpha_seconds;
  const double transfer =
      bytes <= 0 ? 0.0 : bytes * 2.0 * (n - 1.0) / n / bus_bandwidth_bytes_per_second;
  return latency + transfer;
}

StepTime ComputeStepTime(const JobSpec& job, int64_t gpus, int64_t gpus_per_node) {
  StepTime step;
  const int64_t model_parallel = job.tensor_parallel * job.pipeline_parallel;
  step.data_parallel = gpus / model_parallel;
  step.compute_seconds = job.strong_scaling
                             ? job.compute_seconds * static_cast<double>(job.reference_gpus) /
                                   static_cast<double>(gpus)
                             : job.compute_seconds;
  step.bubble_seconds = step.compute_seconds * static_cast<double>(job.pipeline_parallel - 1) /
                        static_cast<double>(job.microbatches);
  step.allreduce_seconds =
      AllReduceSeconds(job.algorithm, job.model_gradient_bytes / model_parallel, step.data_parallel,
                       job.alpha_seconds, job.bus_bandwidth_bytes_per_second);
  step.exposed_allreduce_seconds = (1.0 - job.overlap) * step.allreduce_seconds;
  const double nodes = static_cast<double>(gpus / gpus_per_node);
  step.straggler_factor = 1.0 + (job.straggler_slowdown - 1.0) *
                                    (1.0 - std::pow(1.0 - job.straggler_probability, nodes));
  step.step_seconds =
      (step.compute_seconds + step.bubble_seconds + step.exposed_allreduce_seconds) *
      step.straggler_factor;
  return step;
}

}  // namespace titan::sim
