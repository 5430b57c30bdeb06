#include "src/sim/job_model.h"

#include <cmath>

#include <gtest/gtest.h>

namespace titan::sim {
namespace {

// nccl-tests (PERFORMANCE.md): for all-reduce, busbw = algbw * 2 (n - 1) / n with
// algbw = bytes / time; so at a given bus bandwidth the time is bytes * 2 (n - 1) / n / busbw.
TEST(JobModelTest, RingAllReduceFollowsNcclTestsBusBandwidth) {
  const double bytes = 1e9, busbw = 50e9;
  for (int64_t n : {2, 8, 1024}) {
    const double t = AllReduceSeconds(AllReduceAlgorithm::kRing, bytes, n, 0, busbw);
    const double algbw = bytes / t;
    EXPECT_NEAR(algbw * 2.0 * (n - 1) / n, busbw, 1e-3 * busbw) << n << " ranks";
  }
  EXPECT_EQ(AllReduceSeconds(AllReduceAlgorithm::kRing, bytes, 1, 1e-5, busbw), 0);
}

TEST(JobModelTest, RingLatencyGrowsLinearlyTreeLogarithmically) {
  const double alpha = 10e-6;
  EXPECT_NEAR(AllReduceSeconds(AllReduceAlgorithm::kRing, 0, 1024, alpha, 1e9), 2 * 1023 * alpha,
              1e-12);
  EXPECT_NEAR(AllReduceSeconds(AllReduceAlgorithm::kTree, 0, 1024, alpha, 1e9), 2 * 10 * alpha,
              1e-12);
}

TEST(JobModelTest, StepTimeAddsBubbleExposedCommunicationAndStragglers) {
  JobSpec job;
  job.compute_seconds = 4;
  job.reference_gpus = 1024;
  job.tensor_parallel = 8;
  job.pipeline_parallel = 4;
  job.microbatches = 12;
  job.model_gradient_bytes = 32e9;  // 1e9 bytes per data-parallel shard
  job.bus_bandwidth_bytes_per_second = 10e9;
  job.overlap = 0.5;
  const StepTime step = ComputeStepTime(job, 1024, 8);
  EXPECT_EQ(step.data_parallel, 32);
  EXPECT_DOUBLE_EQ(step.bubble_seconds, 4.0 * 3 / 12);
  EXPECT_NEAR(step.allreduce_seconds, 1e9 * 2 * 31 / 32 / 10e9, 1e-12);
  EXPECT_NEAR(step.exposed_allreduce_seconds, step.allreduce_seconds / 2, 1e-12);
  EXPECT_DOUBLE_EQ(step.straggler_factor, 1);
  EXPECT_NEAR(step.step_seconds, 4 + 1 + step.allreduce_seconds / 2, 1e-12);

  // One node in 1000 is 2x slow in a step: 128 nodes -> 1 - 0.999^128 of steps are slow.
  job.straggler_probability = 1e-3;
  job.straggler_slowdown = 2;
  const StepTime slow = ComputeStepTime(job, 1024, 8);
  EXPECT_NEAR(slow.straggler_factor, 1 + (1 - std::pow(0.999, 128)), 1e-12);
  EXPECT_GT(ComputeStepTime(job, 8192, 8).straggler_factor, slow.straggler_factor);
}

TEST(JobModelTest, StrongScalingShrinksComputeWeakKeepsIt) {
  JobSpec job;
  job.compute_seconds = 8;
  job.reference_gpus = 1024;
  EXPECT_DOUBLE_EQ(ComputeStepTime(job, 4096, 8).compute_seconds, 8);
  job.strong_scaling = true;
  EXPECT_DOUBLE_EQ(ComputeStepTime(job, 4096, 8).compute_seconds, 2);
}

}  // namespace
}  // namespace titan::sim
