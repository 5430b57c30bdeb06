// nvml_probe: runs the NVML collector on its own and prints what it records, for checking a GPU
// host without the rest of the agent (bench/gpu_check.sh).
//
//   nvml_probe [--samples N] [--interval-ms MS] [--library PATH]
//
// Prints one line per sample and GPU with the latest gauge values, then one `SERIES` line per
// series (gauges: recorder points, min, max, last; counters: increase over the run and total),
// `COLLECT_US mean= max=` (time of one Collect() over all GPUs) and `INVALID <count>` (readings
// the collector rejected). Exit codes: 0 ok, 1 Collect() errors,
// 2 bad usage, 3 no NVML / no GPU (Init failed; the reason is printed).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "src/base/clock.h"
#include "src/collectors/nvml_collector.h"

namespace {

int Usage() {
  std::fprintf(stderr, "usage: nvml_probe [--samples N] [--interval-ms MS] [--library PATH]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 20;
  int64_t interval_ms = 100;
  std::string library;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--samples") == 0 && has_value) {
      samples = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--interval-ms") == 0 && has_value) {
      interval_ms = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--library") == 0 && has_value) {
      library = argv[++i];
    } else {
      return Usage();
    }
  }
  if (samples <= 0 || interval_ms <= 0) return Usage();

  titan::MetricRegistry registry;
  std::atomic<uint64_t> invalid{0};
  titan::CollectorContext ctx;
  ctx.registry = &registry;
  ctx.interval_ns = interval_ms * titan::kNsPerMs;
  ctx.invalid_sample = [&invalid](std::string_view, std::string_view what) {
    ++invalid;  // from the sampling thread and the background thread
    std::fprintf(stderr, "invalid sample: %.*s\n", static_cast<int>(what.size()), what.data());
  };
  auto collector = titan::MakeNvmlCollector(library);
  if (titan::Status status = collector->Init(ctx); !status.ok()) {
    std::printf("NVML_UNAVAILABLE %s\n", status.ToString().c_str());
    return 3;
  }
  int errors = 0;
  int64_t collect_total_ns = 0;
  int64_t collect_max_ns = 0;
  const int64_t start_ns = titan::WallNowNs();
  int64_t deadline = titan::MonoNowNs();
  for (int n = 0; n < samples; ++n) {
    const int64_t now_ns = titan::WallNowNs();
    const int64_t collect_start_ns = titan::MonoNowNs();
    const titan::Status status = collector->Collect(now_ns);
    const int64_t collect_ns = titan::MonoNowNs() - collect_start_ns;
    collect_total_ns += collect_ns;
    collect_max_ns = std::max(collect_max_ns, collect_ns);
    if (!status.ok()) {
      ++errors;
      std::printf("COLLECT_ERROR %s\n", status.ToString().c_str());
    }
    std::map<std::string, std::string> line_per_gpu;
    for (titan::Series* series : registry.AllSeries()) {
      if (series->desc().kind != titan::SignalKind::kGauge || series->labels().size() != 2 ||
          series->LastTimeNs() == 0) {
        continue;
      }
      const auto stats = series->Window(now_ns, 1);
      std::string name = series->desc().name.substr(std::strlen("titan_gpu_"));
      char value[64];
      std::snprintf(value, sizeof(value), " %s=%.4g", name.c_str(), stats.last);
      line_per_gpu[series->labels()[0]] += value;
    }
    for (const auto& [gpu, text] : line_per_gpu) {
      std::printf("t=%.3fs gpu=%s%s\n", titan::NsToSeconds(now_ns - start_ns), gpu.c_str(),
                  text.c_str());
    }
    std::fflush(stdout);
    deadline += interval_ms * titan::kNsPerMs;
    titan::SleepUntilMonoNs(deadline);
  }
  collector.reset();  // joins the background thread: `invalid` is no longer written
  const int64_t end_ns = titan::WallNowNs();
  for (titan::Series* series : registry.AllSeries()) {
    std::vector<titan::RecordedPoint> points;
    series->RecorderRange(0, end_ns + titan::kNsPerSecond * 120, &points);
    if (series->desc().kind == titan::SignalKind::kCounter) {
      const double increase = points.empty() ? 0 : points.back().value - points.front().value;
      std::printf("SERIES %s kind=counter points=%zu increase=%.6g total=%.6g\n",
                  series->Key().c_str(), points.size(), increase, series->CounterValue());
    } else {
      const auto stats = series->Window(end_ns, titan::Series::kMaxWindowSeconds);
      std::printf("SERIES %s kind=gauge points=%zu min=%.6g max=%.6g last=%.6g\n",
                  series->Key().c_str(), points.size(), stats.min, stats.max, stats.last);
    }
  }
  std::printf("COLLECT_US mean=%.1f max=%.1f (all GPUs, one Collect)\n",
              static_cast<double>(collect_total_ns) / samples / 1e3,
              static_cast<double>(collect_max_ns) / 1e3);
  std::printf("COLLECTS %d\nINVALID %llu\nERRORS %d\n", samples,
              static_cast<unsigned long long>(invalid.load()), errors);
  return errors > 0 ? 1 : 0;
}
