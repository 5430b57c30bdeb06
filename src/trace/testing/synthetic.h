// Synthetic Kineto traces for tests, benchmarks and fuzzer seeds: a few steps of compute kernels
// and NCCL all-reduces on one GPU per rank, with chosen ranks arriving late at every collective.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace titan::trace::testing {

struct SyntheticOptions {
  int rank = 0;
  int world_size = 4;
  int steps = 3;
  int64_t step_us = 10'000;      // CPU step length
  int64_t compute_us = 4'000;    // compute kernel per step
  int64_t allreduce_us = 1'000;  // all-reduce kernel duration once all ranks arrived
  int64_t late_us = 0;           // this rank arrives this late at each all-reduce
  int64_t max_late_us = 0;       // the latest rank's lateness (all-reduce ends after it)
  int64_t epoch_us = 1'700'000'000'000'000;
  bool pretty = false;  // Kineto-style indentation and newlines
};

// Timeline per step s (t0 = epoch + s * step_us), all on stream 7, one CPU thread:
//   ProfilerStep#s            [t0, t0 + step_us)
//   cudaLaunchKernel (compute) at t0 + 100, kernel "gemm" [t0 + 200, t0 + 200 + compute_us)
//   cudaLaunchKernel (nccl)    at t0 + 200 + compute_us + late_us
//   ncclKernel_AllReduce...    [t0 + 300 + compute_us + late_us,
//                               t0 + 300 + compute_us + max_late_us + allreduce_us)
std::string KinetoTrace(const SyntheticOptions& options);

}  // namespace titan::trace::testing
