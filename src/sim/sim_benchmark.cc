// Inner-loop costs of the simulator: one replica at 16k and 100k GPUs, the parser, and a
// 1,000-replica run on 2 threads (the targets: one 100k-GPU, 90-day replica < 1 s;
// 1,000 replicas < 60 s on 2 cores). Results: bench/RESULTS.md, "## Sim".
#include <benchmark/benchmark.h>

#include "src/base/check.h"
#include "src/sim/engine.h"
#include "src/sim/job_model.h"
#include "src/sim/scenario_text.h"
#include "src/sim/simulate.h"

namespace titan::sim {
namespace {

Scenario Llama3At(int64_t gpus, double days) {
  Result<nlohmann::json> tree = LoadScenarioTree("llama3-16k");
  TITAN_CHECK(tree.ok()) << tree.status().ToString();
  (*tree)["cluster"]["gpus"] = gpus;
  (*tree)["cluster"]["spares"] = gpus / 256;  // enough spares to keep the job running
  (*tree)["job"]["pipeline_parallel"] = 1;    // 100,000 is not a multiple of 128
  (*tree)["run"]["duration_days"] = days;
  Result<Scenario> s = ParseScenario(*tree);
  TITAN_CHECK(s.ok()) << s.status().ToString();
  return *s;
}

void BM_OneReplica(benchmark::State& state) {
  const Scenario s = Llama3At(state.range(0), 90);
  const StepTime step = ComputeStepTime(s.job, s.cluster.gpus, s.cluster.gpus_per_node);
  const EngineModel model = MakeEngineModel(s, 600, step.step_seconds);
  uint64_t index = 0;
  int64_t failures = 0;
  for (auto _ : state) {
    ReplicaResult r = RunReplica(model, 1, index++);
    failures += r.interruptions;
    benchmark::DoNotOptimize(r);
  }
  state.counters["failures/replica"] =
      benchmark::Counter(static_cast<double>(failures) / static_cast<double>(index));
}
BENCHMARK(BM_OneReplica)->Arg(16384)->Arg(100000)->Unit(benchmark::kMillisecond);

void BM_ThousandReplicasTwoThreads(benchmark::State& state) {
  const Scenario s = Llama3At(100000, 90);
  const StepTime step = ComputeStepTime(s.job, s.cluster.gpus, s.cluster.gpus_per_node);
  const EngineModel model = MakeEngineModel(s, 600, step.step_seconds);
  for (auto _ : state) benchmark::DoNotOptimize(RunReplicas(model, 1, 1000, 2));
}
BENCHMARK(BM_ThousandReplicasTwoThreads)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_ParsePreset(benchmark::State& state) {
  for (auto _ : state) {
    Result<nlohmann::json> tree = LoadScenarioTree("llama3-16k");
    Result<Scenario> s = ParseScenario(*tree);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_ParsePreset);

}  // namespace
}  // namespace titan::sim
