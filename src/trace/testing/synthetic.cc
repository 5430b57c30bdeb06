#include "src/trace/testing/synthetic.h"

#include <fmt/format.h>

namespace titan::trace::testing {

std::string KinetoTrace(const SyntheticOptions& o) {
  std::vector<std::string> events;
  int64_t corr = 1000;
  auto x = [&](std::string_view cat, std::string_view name, int pid, int tid, int64_t ts,
               int64_t dur, std::string args) {
    events.push_back(fmt::format(
        R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
        cat, name, pid, tid, ts, dur, args));
  };
  for (int s = 0; s < o.steps; ++s) {
    int64_t t0 = o.epoch_us + s * o.step_us;
    x("user_annotation", fmt::format("ProfilerStep#{}", s + 1), 100, 100, t0, o.step_us,
      R"("External id": 1)");
    x("cpu_op", "aten::mm", 100, 100, t0 + 50, 100, R"("External id": 2)");
    int64_t c1 = ++corr;
    x("cuda_runtime", "cudaLaunchKernel", 100, 100, t0 + 100, 10,
      fmt::format(R"("correlation": {})", c1));
    x("kernel", "volta_sgemm_128x64_nn", 0, 7, t0 + 200, o.compute_us,
      fmt::format(R"("stream": 7, "correlation": {}, "device": 0)", c1));
    events.push_back(fmt::format(
        R"({{"ph": "f", "id": {}, "pid": 0, "tid": 7, "ts": {}, "cat": "ac2g", "name": "ac2g", "bp": "e"}})",
        c1, t0 + 200));
    int64_t launch = t0 + 200 + o.compute_us + o.late_us;
    x("cpu_op", "record_param_comms", 100, 100, launch - 20, 40,
      R"("Collective name": "allreduce", "Process Group Name": "0", "Group size": 4)");
    int64_t c2 = ++corr;
    x("cuda_runtime", "cudaLaunchKernel", 100, 100, launch, 10,
      fmt::format(R"("correlation": {})", c2));
    int64_t start = launch + 100;
    int64_t end = t0 + 300 + o.compute_us + o.max_late_us + o.allreduce_us;
    x("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 0,
      7, start, end - start,
      fmt::format(R"("stream": 7, "correlation": {}, "Collective name": "allreduce", )"
                  R"("Process Group Name": "0", "In msg nelems": 1048576, "Group size": {})",
                  c2, o.world_size));
  }
  std::string sep = o.pretty ? ",\n  " : ", ";
  std::string body;
  for (size_t i = 0; i < events.size(); ++i) {
    if (i) body += sep;
    body += events[i];
  }
  return fmt::format(
      R"({{"schemaVersion": 1, "distributedInfo": {{"backend": "nccl", "rank": {}, "world_size": {}}},{}"traceEvents": [{}{}{}], "traceName": "synthetic"}})",
      o.rank, o.world_size, o.pretty ? "\n" : " ", o.pretty ? "\n  " : "", body,
      o.pretty ? "\n" : "");
}

}  // namespace titan::trace::testing
