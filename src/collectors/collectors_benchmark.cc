// Cost of one Collect() of each host collector on this machine's real /proc, and of one sampling
// round of the collectors that read the same files as node_exporter's cpu, meminfo, vmstat,
// netdev, diskstats and pressure collectors (bench/collectors_vs_shell.sh compares them).
// Each benchmark also reports heap allocations per Collect() (the steady path should make none),
// counted by replacing the global operator new in this binary.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "src/base/clock.h"
#include "src/collectors/cpu_collector.h"
#include "src/collectors/disk_collector.h"
#include "src/collectors/infiniband_collector.h"
#include "src/collectors/memory_collector.h"
#include "src/collectors/net_collector.h"
#include "src/collectors/process_collector.h"
#include "src/collectors/psi_collector.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace titan {
namespace {

struct Bench {
  Env env;
  MetricRegistry registry;
  WatchedProcesses processes;
  CollectorContext ctx;
  std::vector<std::unique_ptr<Collector>> collectors;
  int64_t now_ns = WallNowNs();

  Bench() {
    ctx.env = &env;
    ctx.registry = &registry;
    ctx.interval_ns = 100'000'000;
    ctx.processes = &processes;
    processes.Watch(getpid(), 0);
  }
  // False (and the benchmark skipped) when the collector is not available here.
  bool Add(std::unique_ptr<Collector> collector, benchmark::State& state) {
    const Status status = collector->Init(ctx);
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      return false;
    }
    collectors.push_back(std::move(collector));
    return true;
  }
  void Round() {
    now_ns += ctx.interval_ns;
    for (auto& collector : collectors) collector->Collect(now_ns).IgnoreError();
  }
};

void Run(benchmark::State& state, Bench& bench) {
  for (int i = 0; i < 3; ++i) bench.Round();  // creates series, sets baselines
  const uint64_t before = g_allocations.load();
  for (auto _ : state) bench.Round();
  state.counters["allocs_per_collect"] = benchmark::Counter(
      static_cast<double>(g_allocations.load() - before) / static_cast<double>(state.iterations()));
}

template <typename C>
void BM_Collect(benchmark::State& state) {
  Bench bench;
  if (!bench.Add(std::make_unique<C>(), state)) return;
  Run(state, bench);
}
BENCHMARK(BM_Collect<CpuCollector>)->Name("BM_Collect/cpu");
BENCHMARK(BM_Collect<MemoryCollector>)->Name("BM_Collect/memory");
BENCHMARK(BM_Collect<NetCollector>)->Name("BM_Collect/net");
BENCHMARK(BM_Collect<DiskCollector>)->Name("BM_Collect/disk");
BENCHMARK(BM_Collect<PsiCollector>)->Name("BM_Collect/psi");
BENCHMARK(BM_Collect<ProcessCollector>)->Name("BM_Collect/process");
BENCHMARK(BM_Collect<InfinibandCollector>)->Name("BM_Collect/infiniband");

// cpu + memory + net + disk + psi: /proc/stat, meminfo, vmstat, net/dev, diskstats and the three
// pressure files, the set node_exporter reads with cpu,meminfo,vmstat,netdev,diskstats,pressure.
void BM_HostRound(benchmark::State& state) {
  Bench bench;
  if (!bench.Add(std::make_unique<CpuCollector>(), state) ||
      !bench.Add(std::make_unique<MemoryCollector>(), state) ||
      !bench.Add(std::make_unique<NetCollector>(), state) ||
      !bench.Add(std::make_unique<DiskCollector>(), state) ||
      !bench.Add(std::make_unique<PsiCollector>(PsiCollectorOptions{.triggers = false}), state)) {
    return;
  }
  Run(state, bench);
}
BENCHMARK(BM_HostRound);

}  // namespace
}  // namespace titan
