// cpu: per-core and total CPU time from /proc/stat.
//
// Series (label cpu="total" or "0".."N-1"):
//   titan_cpu_utilization_ratio         gauge: busy share of the last interval, from jiffy deltas
//   titan_cpu_busy_seconds_total        user+nice+system+irq+softirq+steal (guest is inside user)
//   titan_cpu_iowait_seconds_total
// and without labels: titan_context_switches_total, titan_processes_forked_total,
// titan_processes_running and titan_processes_blocked (gauges; blocked = tasks in D state).
//
// Resolution: /proc/stat counts in USER_HZ ticks (sysconf(_SC_CLK_TCK), usually 100 per second),
// so one core's utilisation over a 10 ms interval is 0 or 1. An interval in which a CPU's ticks
// did not advance leaves its gauge unsampled and is merged into the next one.
// Bad input: every counter is a collectors_internal::MonotonicCounter with a bound per CPU (see
// cpu_collector.cc): a tick counter that steps back (iowait does on some kernels) keeps its
// previous value, a glitch (2^64-1) is not exported and costs at most two intervals, both are
// reported (ctx.invalid_sample, titan_collector_readings_dropped_total); a malformed file makes
// Collect() fail with INVALID_ARGUMENT.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "src/base/env.h"
#include "src/base/status.h"
#include "src/collectors/collector.h"

namespace titan {

// One "cpu" or "cpuN" line of /proc/stat, in USER_HZ ticks. Columns missing on old kernels are 0;
// columns added by newer kernels are ignored.
struct CpuTimes {
  int32_t cpu = -1;  // -1: the "cpu" total line
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  uint64_t Busy() const { return user + nice + system + irq + softirq + steal; }
};

struct ProcStat {
  bool has_total = false;
  CpuTimes total;
  std::vector<CpuTimes> cpus;  // in file order
  bool has_context_switches = false;
  uint64_t context_switches = 0;
  bool has_forks = false;
  uint64_t forks = 0;
  bool has_procs = false;
  uint64_t procs_running = 0;
  uint64_t procs_blocked = 0;
};

// Parses /proc/stat into *out (whose vector capacity is reused). INVALID_ARGUMENT naming the line
// when a cpu line has fewer than 4 numeric columns or a CPU number above 65535, or there is no
// total "cpu" line. Never reads out of bounds.
Status ParseProcStat(std::string_view text, ProcStat* out);

class CpuCollector : public Collector {
 public:
  CpuCollector();
  ~CpuCollector() override;
  std::string_view name() const override { return "cpu"; }
  // NOT_FOUND / PERMISSION_DENIED when <proc>/stat cannot be read; INVALID_ARGUMENT when it does
  // not parse.
  Status Init(const CollectorContext& ctx) override;
  Status Collect(int64_t now_ns) override;

 private:
  struct CpuState;
  CpuState* StateFor(int32_t cpu);
  // Records one CPU line; `cpus` is how many CPUs the line sums (the total line: all listed).
  void Record(CpuState& state, const CpuTimes& times, int64_t now_ns, int64_t interval_ns,
              double cpus);

  CollectorContext ctx_;
  double ticks_per_second_ = 100;
  int64_t last_ns_ = 0;  // when the previous Collect() sampled
  std::unique_ptr<FileReader> reader_;
  ProcStat parsed_;
  std::unique_ptr<CpuState> total_;
  std::vector<std::unique_ptr<CpuState>> cpus_;  // by CPU number
  struct GlobalSeries;
  std::unique_ptr<GlobalSeries> global_;
};

std::unique_ptr<Collector> MakeCpuCollector();

}  // namespace titan
