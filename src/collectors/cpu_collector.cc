#include "src/collectors/cpu_collector.h"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "src/base/text.h"
#include "src/collectors/collector_support.h"

namespace titan {
namespace {

using collectors_internal::CounterDesc;
using collectors_internal::GaugeDesc;
using collectors_internal::MonotonicCounter;

constexpr int32_t kMaxCpu = 65535;

// Bounds per CPU listed in /proc/stat, per second (the total line's are times the number of CPUs
// listed): busy, idle and iowait ticks kMaxCpuSecondsPerCpuSecond x USER_HZ; 1e7 context switches
// (100 ns each) and 1e6 forks. A faster increase is a glitch and drops the interval.
constexpr double kMaxContextSwitchesPerCpuSecond = 1e7;
constexpr double kMaxForksPerCpuSecond = 1e6;

// The CPU-time counters kept per CPU, in this order.
enum Ticks { kBusy, kIdle, kIowait, kTickCount };

struct Descs {
  SignalDesc utilization = GaugeDesc("titan_cpu_utilization_ratio",
                                     "Busy share of CPU time over the last sampling interval.",
                                     {"cpu"}, RatioBuckets(), /*detect=*/true);
  SignalDesc busy = CounterDesc(
      "titan_cpu_busy_seconds_total",
      "CPU time spent in user, nice, system, irq, softirq and steal, in seconds.", {"cpu"});
  SignalDesc iowait = CounterDesc("titan_cpu_iowait_seconds_total",
                                  "CPU time idle while waiting for I/O, in seconds.", {"cpu"});
  SignalDesc context_switches =
      CounterDesc("titan_context_switches_total", "Context switches on all CPUs.");
  SignalDesc forks = CounterDesc("titan_processes_forked_total", "Processes and threads created.");
  SignalDesc running = GaugeDesc("titan_processes_running", "Tasks runnable (procs_running).", {},
                                 {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  SignalDesc blocked =
      GaugeDesc("titan_processes_blocked", "Tasks blocked on I/O (D state, procs_blocked).", {},
                {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}, /*detect=*/true);
};

const Descs& D() {
  static const Descs* descs = new Descs();
  return *descs;
}

Status LineError(int line_number, std::string_view what) {
  return InvalidArgumentError("line " + std::to_string(line_number) + ": " + std::string(what) +
                              "; is this a Linux /proc/stat?");
}

}  // namespace

Status ParseProcStat(std::string_view text, ProcStat* out) {
  out->has_total = false;
  out->cpus.clear();
  out->has_context_switches = out->has_forks = out->has_procs = false;
  bool has_running = false, has_blocked = false;
  int line_number = 0;
  while (!text.empty()) {
    std::string_view rest = NextLine(&text);
    ++line_number;
    const std::string_view key = NextField(&rest);
    if (key.size() >= 3 && key.substr(0, 3) == "cpu") {
      CpuTimes times;
      if (key.size() > 3) {
        int64_t cpu = 0;
        if (!ParseInt64(key.substr(3), &cpu) || cpu < 0 || cpu > kMaxCpu) {
          return LineError(line_number, "bad CPU number in '" + std::string(key) + "'");
        }
        times.cpu = static_cast<int32_t>(cpu);
      }
      uint64_t v[8] = {};
      bool bad = false;
      const int n = collectors_internal::ParseUintFields(&rest, v, 8, &bad);
      if (n < 4 || bad) {
        return LineError(line_number, "a cpu line needs at least 4 numeric tick columns");
      }
      times.user = v[0], times.nice = v[1], times.system = v[2], times.idle = v[3];
      times.iowait = v[4], times.irq = v[5], times.softirq = v[6], times.steal = v[7];
      if (times.cpu < 0) {
        out->total = times;
        out->has_total = true;
      } else {
        out->cpus.push_back(times);
      }
      continue;
    }
    uint64_t value = 0;
    const bool numeric = ParseUint64(NextField(&rest), &value);
    if (!numeric) continue;  // intr, softirq lines have many columns; unknown keys are skipped
    if (key == "ctxt") {
      out->context_switches = value;
      out->has_context_switches = true;
    } else if (key == "processes") {
      out->forks = value;
      out->has_forks = true;
    } else if (key == "procs_running") {
      out->procs_running = value;
      has_running = true;
    } else if (key == "procs_blocked") {
      out->procs_blocked = value;
      has_blocked = true;
    }
  }
  out->has_procs = has_running && has_blocked;
  if (!out->has_total) return InvalidArgumentError("no total 'cpu' line; is this /proc/stat?");
  return OkStatus();
}

struct CpuCollector::CpuState {
  std::string device;  // "cpu" (the total line) or "cpuN", for reports
  Series* utilization = nullptr;
  Series* busy_seconds = nullptr;
  Series* iowait_seconds = nullptr;
  MonotonicCounter ticks[kTickCount];
  uint64_t pending_busy = 0;   // ticks since the last utilisation sample
  uint64_t pending_total = 0;  // (kept when an interval had no ticks at all)
};

struct CpuCollector::GlobalSeries {
  Series* context_switches = nullptr;
  Series* forks = nullptr;
  Series* running = nullptr;
  Series* blocked = nullptr;
  MonotonicCounter context_switches_value, forks_value;
};

CpuCollector::CpuCollector() = default;
CpuCollector::~CpuCollector() = default;

Status CpuCollector::Init(const CollectorContext& ctx) {
  ctx_ = ctx;
  const long ticks = sysconf(_SC_CLK_TCK);
  ticks_per_second_ = ticks > 0 ? static_cast<double>(ticks) : 100.0;
  reader_ = std::make_unique<FileReader>(ctx.env->ProcPath("stat"));
  TITAN_RETURN_IF_ERROR(collectors_internal::ReadAndParse(*reader_, ParseProcStat, &parsed_));
  MetricRegistry& registry = *ctx_.registry;
  global_ = std::make_unique<GlobalSeries>();
  global_->context_switches = registry.GetOrCreate(D().context_switches, {}, ctx.interval_ns);
  global_->forks = registry.GetOrCreate(D().forks, {}, ctx.interval_ns);
  global_->running = registry.GetOrCreate(D().running, {}, ctx.interval_ns);
  global_->blocked = registry.GetOrCreate(D().blocked, {}, ctx.interval_ns);
  return OkStatus();
}

CpuCollector::CpuState* CpuCollector::StateFor(int32_t cpu) {
  std::unique_ptr<CpuState>* slot = &total_;
  if (cpu >= 0) {
    if (static_cast<size_t>(cpu) >= cpus_.size()) cpus_.resize(static_cast<size_t>(cpu) + 1);
    slot = &cpus_[static_cast<size_t>(cpu)];
  }
  if (*slot == nullptr) {  // slow path: first sight of this CPU
    *slot = std::make_unique<CpuState>();
    (*slot)->device = cpu < 0 ? "cpu" : "cpu" + std::to_string(cpu);
    const LabelValues labels = {cpu < 0 ? std::string("total") : std::to_string(cpu)};
    MetricRegistry& registry = *ctx_.registry;
    (*slot)->utilization = registry.GetOrCreate(D().utilization, labels, ctx_.interval_ns);
    (*slot)->busy_seconds = registry.GetOrCreate(D().busy, labels, ctx_.interval_ns);
    (*slot)->iowait_seconds = registry.GetOrCreate(D().iowait, labels, ctx_.interval_ns);
  }
  return slot->get();
}

void CpuCollector::Record(CpuState& state, const CpuTimes& times, int64_t now_ns,
                          int64_t interval_ns, double cpus) {
  const uint64_t readings[kTickCount] = {times.Busy(), times.idle, times.iowait};
  const double bound = collectors_internal::kMaxCpuSecondsPerCpuSecond * ticks_per_second_ * cpus;
  const double bounds[kTickCount] = {bound, bound, bound};
  uint64_t delta[kTickCount];
  const bool first = !state.ticks[kBusy].seen;
  const bool whole =
      collectors_internal::AdvanceAll(ctx_, name(), "/proc/stat", state.device, kTickCount,
                                      readings, bounds, interval_ns, state.ticks, delta);
  collectors_internal::SetCounter(state.busy_seconds, now_ns,
                                  state.ticks[kBusy].total / ticks_per_second_);
  collectors_internal::SetCounter(state.iowait_seconds, now_ns,
                                  state.ticks[kIowait].total / ticks_per_second_);
  if (first || !whole) return;
  state.pending_busy += delta[kBusy];
  state.pending_total += delta[kBusy] + delta[kIdle] + delta[kIowait];
  if (state.pending_total == 0) return;  // no tick in this interval: merge it into the next
  const double ratio =
      static_cast<double>(state.pending_busy) / static_cast<double>(state.pending_total);
  state.pending_busy = state.pending_total = 0;
  collectors_internal::RecordGauge(state.utilization, now_ns, ratio);
}

Status CpuCollector::Collect(int64_t now_ns) {
  TITAN_RETURN_IF_ERROR(collectors_internal::ReadAndParse(*reader_, ParseProcStat, &parsed_));
  const int64_t interval_ns = now_ns - last_ns_;
  last_ns_ = now_ns;
  const double cpus = static_cast<double>(std::max<size_t>(parsed_.cpus.size(), 1));
  Record(*StateFor(-1), parsed_.total, now_ns, interval_ns, cpus);
  for (const CpuTimes& times : parsed_.cpus) {
    Record(*StateFor(times.cpu), times, now_ns, interval_ns, 1);
  }
  GlobalSeries& g = *global_;
  uint64_t delta = 0;
  if (parsed_.has_context_switches) {
    collectors_internal::AdvanceOne(ctx_, name(), "/proc/stat", "ctxt", parsed_.context_switches,
                                    kMaxContextSwitchesPerCpuSecond * cpus, interval_ns,
                                    &g.context_switches_value, &delta);
    collectors_internal::SetCounter(g.context_switches, now_ns, g.context_switches_value.total);
  }
  if (parsed_.has_forks) {
    collectors_internal::AdvanceOne(ctx_, name(), "/proc/stat", "processes", parsed_.forks,
                                    kMaxForksPerCpuSecond * cpus, interval_ns, &g.forks_value,
                                    &delta);
    collectors_internal::SetCounter(g.forks, now_ns, g.forks_value.total);
  }
  if (parsed_.has_procs) {
    collectors_internal::RecordGauge(g.running, now_ns, static_cast<double>(parsed_.procs_running));
    collectors_internal::RecordGauge(g.blocked, now_ns, static_cast<double>(parsed_.procs_blocked));
  }
  return OkStatus();
}

std::unique_ptr<Collector> MakeCpuCollector() { return std::make_unique<CpuCollector>(); }

}  // namespace titan
