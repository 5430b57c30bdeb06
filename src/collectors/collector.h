// Collector: one source of signals (node_exporter style: one file per collector, each with its
// own success metric; one failing collector never fails a scrape or stalls another).
//
// Lifecycle: the agent constructs every collector from the explicit list in
// collector_registry.cc, calls Init() once, and if Init() succeeds runs Collect() on the
// collector's own sampling thread at its interval. Collectors record straight into the Series
// they obtained from ctx.registry (keep the pointers; creation is the slow path).
//
// Errors: Init() returning FAILED_PRECONDITION / NOT_FOUND / UNAVAILABLE means "this source is
// not on this machine" (no NVML, no /proc/pressure, no InfiniBand): the agent logs it once,
// exports titan_collector_up{collector=...} 0 and never schedules it. Collect() errors are
// counted in titan_collector_errors_total and logged rate-limited; the next Collect() runs on
// schedule. Bad values from the source (utilisation 808334905 %) are dropped and counted via
// ctx.invalid_sample (never exported as if true).
//
// Thread safety: Init() and Collect() are called from one thread at a time (the sampling
// thread); a collector needs no locking of its own unless it shares state with other threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "src/base/env.h"
#include "src/base/status.h"
#include "src/collectors/watched_processes.h"
#include "src/metrics/registry.h"

namespace titan {

struct CollectorContext {
  const Env* env = nullptr;                     // where /proc and /sys are
  MetricRegistry* registry = nullptr;           // where series live
  int64_t interval_ns = 100'000'000;            // this collector's sampling interval
  const WatchedProcesses* processes = nullptr;  // training ranks registered with the agent
  // Reports a rejected reading: (collector, what) e.g. ("nvml", "utilization > 100%").
  // Thread-safe; rate-limits its own logging.
  std::function<void(std::string_view collector, std::string_view what)> invalid_sample;
};

class Collector {
 public:
  virtual ~Collector() = default;
  // Short stable name: "cpu", "memory", "nvml"; used in flags and the up/errors metrics.
  virtual std::string_view name() const = 0;
  virtual Status Init(const CollectorContext& ctx) = 0;
  // Reads the source once; `now_ns` is wall-clock time of this sample.
  virtual Status Collect(int64_t now_ns) = 0;
};

}  // namespace titan
