#include "src/collectors/memory_collector.h"

#include <unistd.h>

#include <limits>
#include <string>

#include "src/base/text.h"
#include "src/collectors/collector_support.h"

namespace titan {
namespace {

using collectors_internal::CounterDesc;
using collectors_internal::GaugeDesc;
using collectors_internal::MonotonicCounter;

constexpr std::string_view kMeminfoKeys[Meminfo::kFieldCount] = {
    "MemTotal", "MemFree",   "MemAvailable", "Buffers", "Cached",
    "Dirty",    "Writeback", "SwapTotal",    "SwapFree"};
constexpr std::string_view kVmstatKeys[Vmstat::kFieldCount] = {
    "pgfault", "pgmajfault", "pgpgin", "pgpgout", "pswpin", "pswpout", "oom_kill"};

// The most each vmstat counter can grow per second on one machine: 1e10 page faults (100 ns
// each on 1,024 CPUs); major faults, which wait for I/O, kMaxStorageOpsPerSecond (1e8); KiB
// paged in or out kMaxStorageBytesPerSecond / 1024 (400 GB/s); pages swapped in or out the same
// bytes / 4 KiB (the smallest page); 1e4 OOM kills. A faster increase is a glitch and drops it.
constexpr double kMaxVmstatPerSecond[Vmstat::kFieldCount] = {
    1e10,
    collectors_internal::kMaxStorageOpsPerSecond,
    collectors_internal::kMaxStorageBytesPerSecond / 1024,
    collectors_internal::kMaxStorageBytesPerSecond / 1024,
    collectors_internal::kMaxStorageBytesPerSecond / 4096,
    collectors_internal::kMaxStorageBytesPerSecond / 4096,
    1e4};

template <size_t N>
int FindKey(const std::string_view (&keys)[N], std::string_view key) {
  for (size_t i = 0; i < N; ++i) {
    if (keys[i] == key) return static_cast<int>(i);
  }
  return -1;
}

Status LineError(std::string_view file, int line_number, std::string_view what) {
  return InvalidArgumentError(std::string(file) + " line " + std::to_string(line_number) + ": " +
                              std::string(what));
}

struct Descs {
  SignalDesc used = GaugeDesc("titan_memory_used_bytes", "MemTotal - MemAvailable.", {},
                              BytesBuckets(), /*detect=*/true);
  SignalDesc available =
      GaugeDesc("titan_memory_available_bytes", "MemAvailable: memory available without swapping.",
                {}, BytesBuckets());
  SignalDesc total = GaugeDesc("titan_memory_total_bytes", "MemTotal.", {}, {});
  SignalDesc dirty =
      GaugeDesc("titan_memory_dirty_bytes", "Dirty: page cache waiting for writeback.", {},
                BytesBuckets(), /*detect=*/true);
  SignalDesc writeback =
      GaugeDesc("titan_memory_writeback_bytes", "Writeback: page cache being written back now.", {},
                BytesBuckets());
  SignalDesc swap_used =
      GaugeDesc("titan_memory_swap_used_bytes", "SwapTotal - SwapFree.", {}, BytesBuckets());
  SignalDesc counters[Vmstat::kFieldCount] = {
      CounterDesc("titan_memory_page_faults_total", "Page faults (pgfault)."),
      CounterDesc("titan_memory_major_page_faults_total",
                  "Major page faults that needed I/O (pgmajfault)."),
      CounterDesc("titan_memory_paged_in_bytes_total",
                  "Bytes paged in from block devices (pgpgin)."),
      CounterDesc("titan_memory_paged_out_bytes_total",
                  "Bytes paged out to block devices (pgpgout)."),
      CounterDesc("titan_memory_swapped_in_bytes_total", "Bytes swapped in (pswpin)."),
      CounterDesc("titan_memory_swapped_out_bytes_total", "Bytes swapped out (pswpout)."),
      CounterDesc("titan_memory_oom_kills_total", "Processes killed by the OOM killer (oom_kill)."),
  };
};

const Descs& D() {
  static const Descs* descs = new Descs();
  return *descs;
}

}  // namespace

Status ParseMeminfo(std::string_view text, Meminfo* out) {
  *out = Meminfo{};
  int line_number = 0;
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    ++line_number;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const int field = FindKey(kMeminfoKeys, line.substr(0, colon));
    if (field < 0) continue;
    std::string_view rest = line.substr(colon + 1);
    const std::string_view number = NextField(&rest);
    const std::string_view unit = NextField(&rest);
    uint64_t value = 0;
    if (!ParseUint64(number, &value)) {
      return LineError("meminfo", line_number,
                       "value of " + std::string(kMeminfoKeys[field]) + " is not a number");
    }
    if (unit == "kB") {
      if (value > std::numeric_limits<uint64_t>::max() / 1024) {
        return LineError("meminfo", line_number, "value overflows 64 bits in bytes");
      }
      value *= 1024;
    } else if (!unit.empty()) {
      return LineError("meminfo", line_number, "unknown unit '" + std::string(unit) + "'");
    }
    out->value[field] = value;
    out->present |= 1u << field;
  }
  if (!out->Has(Meminfo::kMemTotal)) return InvalidArgumentError("meminfo has no MemTotal line");
  if (!out->Has(Meminfo::kMemAvailable) && out->Has(Meminfo::kMemFree)) {
    out->value[Meminfo::kMemAvailable] = out->value[Meminfo::kMemFree] +
                                         out->value[Meminfo::kBuffers] +
                                         out->value[Meminfo::kCached];
    out->present |= 1u << Meminfo::kMemAvailable;
  }
  return OkStatus();
}

Status ParseVmstat(std::string_view text, Vmstat* out) {
  *out = Vmstat{};
  int line_number = 0;
  while (!text.empty()) {
    std::string_view rest = NextLine(&text);
    ++line_number;
    const int field = FindKey(kVmstatKeys, NextField(&rest));
    if (field < 0) continue;
    if (!ParseUint64(NextField(&rest), &out->value[field])) {
      return LineError("vmstat", line_number,
                       "value of " + std::string(kVmstatKeys[field]) + " is not a number");
    }
    out->present |= 1u << field;
  }
  if (!out->Has(Vmstat::kPgfault)) return InvalidArgumentError("vmstat has no pgfault line");
  return OkStatus();
}

struct MemoryCollector::State {
  Series* used = nullptr;
  Series* available = nullptr;
  Series* total = nullptr;
  Series* dirty = nullptr;
  Series* writeback = nullptr;
  Series* swap_used = nullptr;
  Series* counters[Vmstat::kFieldCount] = {};
  MonotonicCounter counter_values[Vmstat::kFieldCount];
  int64_t last_vmstat_ns = 0;  // when vmstat was last sampled
  double counter_scale[Vmstat::kFieldCount] = {};
};

MemoryCollector::MemoryCollector() = default;
MemoryCollector::~MemoryCollector() = default;

Status MemoryCollector::Init(const CollectorContext& ctx) {
  ctx_ = ctx;
  const long page = sysconf(_SC_PAGESIZE);
  page_bytes_ = page > 0 ? static_cast<uint64_t>(page) : 4096;
  meminfo_reader_ = std::make_unique<FileReader>(ctx.env->ProcPath("meminfo"));
  vmstat_reader_ = std::make_unique<FileReader>(ctx.env->ProcPath("vmstat"));
  TITAN_RETURN_IF_ERROR(
      collectors_internal::ReadAndParse(*meminfo_reader_, ParseMeminfo, &meminfo_));
  TITAN_RETURN_IF_ERROR(collectors_internal::ReadAndParse(*vmstat_reader_, ParseVmstat, &vmstat_));

  state_ = std::make_unique<State>();
  MetricRegistry& r = *ctx.registry;
  const int64_t interval = ctx.interval_ns;
  state_->used = r.GetOrCreate(D().used, {}, interval);
  state_->available = r.GetOrCreate(D().available, {}, interval);
  state_->total = r.GetOrCreate(D().total, {}, interval);
  state_->dirty = r.GetOrCreate(D().dirty, {}, interval);
  state_->writeback = r.GetOrCreate(D().writeback, {}, interval);
  state_->swap_used = r.GetOrCreate(D().swap_used, {}, interval);
  for (uint32_t f = 0; f < Vmstat::kFieldCount; ++f) {
    if (vmstat_.Has(static_cast<Vmstat::Field>(f))) {
      state_->counters[f] = r.GetOrCreate(D().counters[f], {}, interval);
    }
    state_->counter_scale[f] = 1;
  }
  state_->counter_scale[Vmstat::kPgpgin] = state_->counter_scale[Vmstat::kPgpgout] = 1024;
  state_->counter_scale[Vmstat::kPswpin] = state_->counter_scale[Vmstat::kPswpout] =
      static_cast<double>(page_bytes_);
  return OkStatus();
}

void MemoryCollector::RecordMeminfo(int64_t now_ns) {
  using collectors_internal::RecordGauge;
  const Meminfo& m = meminfo_;
  State& s = *state_;
  const uint64_t total = m.Get(Meminfo::kMemTotal);
  RecordGauge(s.total, now_ns, static_cast<double>(total));
  if (m.Has(Meminfo::kMemAvailable)) {
    const uint64_t available = m.Get(Meminfo::kMemAvailable);
    if (available <= total) {
      RecordGauge(s.available, now_ns, static_cast<double>(available));
      RecordGauge(s.used, now_ns, static_cast<double>(total - available));
    } else {
      collectors_internal::ReportInvalid(ctx_, name(), "MemAvailable > MemTotal in meminfo");
    }
  }
  if (m.Has(Meminfo::kDirty))
    RecordGauge(s.dirty, now_ns, static_cast<double>(m.Get(Meminfo::kDirty)));
  if (m.Has(Meminfo::kWriteback)) {
    RecordGauge(s.writeback, now_ns, static_cast<double>(m.Get(Meminfo::kWriteback)));
  }
  if (m.Has(Meminfo::kSwapTotal) && m.Has(Meminfo::kSwapFree)) {
    if (m.Get(Meminfo::kSwapFree) <= m.Get(Meminfo::kSwapTotal)) {
      RecordGauge(s.swap_used, now_ns,
                  static_cast<double>(m.Get(Meminfo::kSwapTotal) - m.Get(Meminfo::kSwapFree)));
    } else {
      collectors_internal::ReportInvalid(ctx_, name(), "SwapFree > SwapTotal in meminfo");
    }
  }
}

void MemoryCollector::RecordVmstat(int64_t now_ns) {
  State& s = *state_;
  const int64_t interval_ns = now_ns - s.last_vmstat_ns;
  s.last_vmstat_ns = now_ns;
  for (uint32_t f = 0; f < Vmstat::kFieldCount; ++f) {
    if (!vmstat_.Has(static_cast<Vmstat::Field>(f)) || s.counters[f] == nullptr) continue;
    uint64_t delta = 0;
    collectors_internal::AdvanceOne(ctx_, name(), "vmstat", kVmstatKeys[f], vmstat_.value[f],
                                    kMaxVmstatPerSecond[f], interval_ns, &s.counter_values[f],
                                    &delta);
    collectors_internal::SetCounter(s.counters[f], now_ns,
                                    s.counter_values[f].total * s.counter_scale[f]);
  }
}

Status MemoryCollector::Collect(int64_t now_ns) {
  TITAN_RETURN_IF_ERROR(
      collectors_internal::ReadAndParse(*meminfo_reader_, ParseMeminfo, &meminfo_));
  RecordMeminfo(now_ns);
  TITAN_RETURN_IF_ERROR(collectors_internal::ReadAndParse(*vmstat_reader_, ParseVmstat, &vmstat_));
  RecordVmstat(now_ns);
  return OkStatus();
}

std::unique_ptr<Collector> MakeMemoryCollector() { return std::make_unique<MemoryCollector>(); }

}  // namespace titan
