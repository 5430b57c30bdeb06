// How long /metrics takes to render for a busy 8-GPU node: 8 GPUs x 14 gauge signals, 64 CPU
// cores, 16 disks, 8 NICs, 8 ranks of step signals: ~350 gauge series each with window stats
// and a histogram, plus ~200 counters, 150 samples in each window (100 ms over 15 s).
// Target (issue: titan agent): under 5 ms.
#include <benchmark/benchmark.h>

#include <deque>
#include <string>

#include "src/base/clock.h"
#include "src/metrics/exposition.h"
#include "src/metrics/registry.h"

namespace titan {
namespace {

struct BusyNode {
  std::deque<SignalDesc> descs;  // stable addresses
  MetricRegistry registry;
  int64_t now = WallNowNs();

  void AddFamily(const std::string& name, const std::string& label, int count, bool histogram,
                 SignalKind kind = SignalKind::kGauge) {
    descs.push_back({name,
                     "Benchmark signal.",
                     kind,
                     {label},
                     histogram ? RatioBuckets() : std::vector<double>{}});
    for (int i = 0; i < count; ++i) {
      Series* s = registry.GetOrCreate(descs.back(), {std::to_string(i)}, 100 * kNsPerMs);
      for (int k = 0; k < 150; ++k) {
        const int64_t t = now - (150 - k) * 100 * kNsPerMs;
        if (kind == SignalKind::kGauge) {
          s->RecordGauge(t, 0.5 + 0.001 * k);
        } else {
          s->AddCounter(t, 1);
        }
      }
    }
  }

  BusyNode() {
    for (const char* g :
         {"utilization_ratio", "memory_utilization_ratio", "memory_used_bytes", "power_watts",
          "sm_clock_hertz", "memory_clock_hertz", "temperature_celsius",
          "pcie_transmit_bytes_per_second", "pcie_receive_bytes_per_second", "a_ratio", "b_ratio",
          "c_ratio", "d_ratio", "e_ratio"}) {
      AddFamily(std::string("titan_gpu_") + g, "gpu", 8, true);
    }
    AddFamily("titan_cpu_utilization_ratio", "cpu", 65, true);
    AddFamily("titan_cpu_busy_seconds_total", "cpu", 65, false, SignalKind::kCounter);
    AddFamily("titan_disk_busy_ratio", "device", 16, true);
    AddFamily("titan_disk_written_bytes_total", "device", 16, false, SignalKind::kCounter);
    AddFamily("titan_network_receive_bytes_per_second", "device", 8, true);
    AddFamily("titan_network_receive_bytes_total", "device", 8, false, SignalKind::kCounter);
    AddFamily("titan_step_duration_seconds", "rank", 8, true);
    AddFamily("titan_gpu_throttle_seconds_total", "gpu", 64, false, SignalKind::kCounter);
  }
};

void BM_RenderMetricsBusy8GpuNode(benchmark::State& state) {
  BusyNode node;
  const auto format =
      state.range(0) ? ExpositionFormat::kOpenMetrics : ExpositionFormat::kPrometheusText;
  size_t bytes = 0;
  for (auto _ : state) {
    std::string out;
    out.reserve(256 << 10);
    RenderExposition(node.registry, {format, 15, node.now}, &out);
    bytes = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["series"] = static_cast<double>(node.registry.series_count());
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderMetricsBusy8GpuNode)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_RecordGauge(benchmark::State& state) {
  const SignalDesc desc{"titan_bench_ratio", "x", SignalKind::kGauge, {}, RatioBuckets()};
  Series series(desc, {}, 6000);
  int64_t t = WallNowNs();
  double v = 0;
  for (auto _ : state) {
    series.RecordGauge(t += 100 * kNsPerMs, v += 0.001);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordGauge);

}  // namespace
}  // namespace titan
