#include "src/collectors/process_collector.h"

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

constexpr double kCoresSlack = 0.1;  // tick granularity on short intervals
constexpr int64_t kGoneProbeNs = 1'000'000'000;

// Bounds per process, per second: CPU ticks kMaxCpuSecondsPerCpuSecond x USER_HZ on every CPU
// of the machine; major faults and I/O bytes those of the whole machine's storage
// (kMaxStorageOpsPerSecond, kMaxStorageBytesPerSecond). A faster increase is a glitch: no delta
// for the interval, and the exported counter does not take it.

struct Descs {
  SignalDesc cpu_seconds = CounterDesc("titan_process_cpu_seconds_total",
                                       "CPU time of the process (user + system).", {"rank", "pid"});
  SignalDesc read_bytes =
      CounterDesc("titan_process_read_bytes_total",
                  "Bytes the process caused to be read from storage.", {"rank", "pid"});
  SignalDesc written_bytes =
      CounterDesc("titan_process_written_bytes_total",
                  "Bytes the process caused to be written to storage.", {"rank", "pid"});
  SignalDesc major_faults = CounterDesc("titan_process_major_page_faults_total",
                                        "Major page faults of the process.", {"rank", "pid"});
  SignalDesc rss = GaugeDesc("titan_process_resident_memory_bytes", "Resident set size (VmRSS).",
                             {"rank", "pid"}, BytesBuckets(), /*detect=*/true);
  SignalDesc cores = GaugeDesc("titan_process_cpu_cores",
                               "CPU seconds per second over the last sampling interval.",
                               {"rank", "pid"}, {0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128},
                               /*detect=*/true);
  SignalDesc threads =
      GaugeDesc("titan_process_threads", "Threads of the process.", {"rank", "pid"}, {});
};

const Descs& D() {
  static const Descs* descs = new Descs();
  return *descs;
}

}  // namespace

Status ParseProcessStat(std::string_view text, ProcessStat* out) {
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open ||
      !ParseInt64(Trim(text.substr(0, open)), &out->pid)) {
    return InvalidArgumentError("stat does not start with '<pid> (<comm>)'");
  }
  std::string_view rest = text.substr(close + 1);
  const std::string_view state = NextField(&rest);
  if (state.size() != 1) return InvalidArgumentError("stat: bad state field");
  out->state = state[0];
  // Fields 4..24 (rss) are needed. Some may be negative (tty_nr, tpgid), so they are taken as
  // text and only the wanted ones parsed; fields after 24 (newer kernels add more) are ignored.
  std::string_view fields[21];
  for (std::string_view& field : fields) {
    field = NextField(&rest);
    if (field.empty()) return InvalidArgumentError("stat: fewer than 24 fields");
  }
  auto number = [&fields](int field_number, uint64_t* value) {
    return ParseUint64(fields[field_number - 4], value);
  };
  if (!number(12, &out->major_faults) || !number(14, &out->utime_ticks) ||
      !number(15, &out->stime_ticks) || !number(20, &out->threads) ||
      !number(22, &out->start_ticks) || !number(24, &out->rss_pages)) {
    return InvalidArgumentError("stat: a counter field is not an unsigned number");
  }
  return OkStatus();
}

Status ParseProcessStatusRss(std::string_view text, uint64_t* rss_bytes) {
  while (!text.empty()) {
    std::string_view rest = NextLine(&text);
    if (NextField(&rest) != "VmRSS:") continue;
    uint64_t kib = 0;
    if (!ParseUint64(NextField(&rest), &kib) || NextField(&rest) != "kB" || kib > (1ULL << 53)) {
      return InvalidArgumentError("status: VmRSS is not '<number> kB'");
    }
    *rss_bytes = kib * 1024;
    return OkStatus();
  }
  return NotFoundError("status has no VmRSS line");
}

Status ParseProcessIo(std::string_view text, ProcessIo* out) {
  bool has_read = false, has_write = false;
  while (!text.empty()) {
    std::string_view rest = NextLine(&text);
    const std::string_view key = NextField(&rest);
    if (key == "read_bytes:") {
      has_read = ParseUint64(NextField(&rest), &out->read_bytes);
      if (!has_read) return InvalidArgumentError("io: read_bytes is not a number");
    } else if (key == "write_bytes:") {
      has_write = ParseUint64(NextField(&rest), &out->write_bytes);
      if (!has_write) return InvalidArgumentError("io: write_bytes is not a number");
    }
  }
  if (!has_read || !has_write) return InvalidArgumentError("io: no read_bytes/write_bytes lines");
  return OkStatus();
}

struct ProcessCollector::Entry {
  Entry(const Env& env, pid_t pid)
      : device("pid " + std::to_string(pid)),
        stat(env.ProcPath(std::to_string(pid) + "/stat"), 4096),
        status(env.ProcPath(std::to_string(pid) + "/status"), 64 << 10),
        io(env.ProcPath(std::to_string(pid) + "/io"), 4096) {}
  std::string device;  // "pid N", for reports
  FileReader stat, status, io;
  bool io_denied = false;
  int32_t rank = 0;
  bool resolved = false;
  uint64_t start_ticks = 0;
  uint64_t round = 0;
  Series* cpu_seconds = nullptr;
  Series* read_bytes = nullptr;
  Series* written_bytes = nullptr;
  Series* major_faults = nullptr;
  Series* rss = nullptr;
  Series* cores = nullptr;
  Series* threads = nullptr;
  MonotonicCounter cpu_ticks, major_fault_count, read_count, write_count;
  int64_t last_ns = 0;
  bool gone = false;  // the process vanished; probed again at next_probe_ns
  int64_t next_probe_ns = 0;
};

ProcessCollector::ProcessCollector() = default;
ProcessCollector::~ProcessCollector() = default;

Status ProcessCollector::Init(const CollectorContext& ctx) {
  if (ctx.processes == nullptr) {
    return FailedPreconditionError("the process collector needs the agent's watched processes");
  }
  ctx_ = ctx;
  const long ticks = sysconf(_SC_CLK_TCK);
  ticks_per_second_ = ticks > 0 ? static_cast<double>(ticks) : 100.0;
  const long page = sysconf(_SC_PAGESIZE);
  page_bytes_ = page > 0 ? static_cast<uint64_t>(page) : 4096;
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  max_ticks_per_second_ = collectors_internal::kMaxCpuSecondsPerCpuSecond * ticks_per_second_ *
                          static_cast<double>(cpus > 0 ? cpus : 1);
  return OkStatus();
}

void ProcessCollector::Resolve(Entry& entry, const WatchedProcess& process) {
  MetricRegistry& r = *ctx_.registry;
  const LabelValues labels = {std::to_string(process.rank), std::to_string(process.pid)};
  entry.rank = process.rank;
  entry.resolved = true;
  entry.cpu_seconds = r.GetOrCreate(D().cpu_seconds, labels, ctx_.interval_ns);
  entry.read_bytes = r.GetOrCreate(D().read_bytes, labels, ctx_.interval_ns);
  entry.written_bytes = r.GetOrCreate(D().written_bytes, labels, ctx_.interval_ns);
  entry.major_faults = r.GetOrCreate(D().major_faults, labels, ctx_.interval_ns);
  entry.rss = r.GetOrCreate(D().rss, labels, ctx_.interval_ns);
  entry.cores = r.GetOrCreate(D().cores, labels, ctx_.interval_ns);
  entry.threads = r.GetOrCreate(D().threads, labels, ctx_.interval_ns);
}

bool ProcessCollector::CollectOne(Entry& entry, const WatchedProcess& process, int64_t now_ns) {
  using collectors_internal::RecordGauge;
  using collectors_internal::SetCounter;
  Result<std::string_view> stat_text = entry.stat.Read();
  if (!stat_text.ok()) return false;  // gone (ENOENT/ESRCH) or never ours to read
  ProcessStat stat;
  Status parsed = ParseProcessStat(*stat_text, &stat);
  if (!parsed.ok()) {
    collectors_internal::ReportInvalid(ctx_, name(), "unparsable /proc/<pid>/stat");
    return true;
  }
  if (stat.state == 'Z' || stat.state == 'X') return false;  // exited, not yet reaped
  if (!entry.resolved || entry.rank != process.rank) Resolve(entry, process);
  if (entry.cpu_ticks.seen && stat.start_ticks != entry.start_ticks) {
    // The pid was reused by another process: start its state afresh.
    entry.cpu_ticks = entry.major_fault_count = entry.read_count = entry.write_count = {};
    entry.io_denied = false;
  }
  entry.start_ticks = stat.start_ticks;

  using collectors_internal::AdvanceOne;
  using collectors_internal::kMaxStorageBytesPerSecond;
  const int64_t interval_ns = now_ns - entry.last_ns;
  entry.last_ns = now_ns;
  const bool first = !entry.cpu_ticks.seen;
  uint64_t cpu_delta = 0, delta = 0;
  const bool have_cpu_delta = AdvanceOne(ctx_, name(), "/proc/<pid>/stat", entry.device,
                                         stat.utime_ticks + stat.stime_ticks, max_ticks_per_second_,
                                         interval_ns, &entry.cpu_ticks, &cpu_delta);
  SetCounter(entry.cpu_seconds, now_ns, entry.cpu_ticks.total / ticks_per_second_);
  AdvanceOne(ctx_, name(), "/proc/<pid>/stat", entry.device, stat.major_faults,
             collectors_internal::kMaxStorageOpsPerSecond, interval_ns, &entry.major_fault_count,
             &delta);
  SetCounter(entry.major_faults, now_ns, entry.major_fault_count.total);
  RecordGauge(entry.threads, now_ns, static_cast<double>(stat.threads));
  if (!first && have_cpu_delta && interval_ns > 0) {
    const double cores =
        static_cast<double>(cpu_delta) / ticks_per_second_ * 1e9 / static_cast<double>(interval_ns);
    // utime and stime are each truncated to ticks, so their sum may step by two ticks in an
    // instant: allow two ticks over the interval beyond what the threads could use.
    const double max_cores =
        static_cast<double>(std::max<uint64_t>(stat.threads, 1)) * (1 + kCoresSlack) +
        2e9 / ticks_per_second_ / static_cast<double>(interval_ns);
    if (cores <= max_cores) {
      RecordGauge(entry.cores, now_ns, cores);
    } else {
      collectors_internal::ReportInvalid(ctx_, name(), "process CPU use above its thread count");
    }
  }

  uint64_t rss_bytes = stat.rss_pages * page_bytes_;
  if (Result<std::string_view> status_text = entry.status.Read(); status_text.ok()) {
    ParseProcessStatusRss(*status_text, &rss_bytes).IgnoreError();  // fall back to stat's rss
  }
  RecordGauge(entry.rss, now_ns, static_cast<double>(rss_bytes));

  if (!entry.io_denied) {
    Result<std::string_view> io_text = entry.io.Read();
    ProcessIo io;
    if (!io_text.ok()) {
      // EACCES without ptrace access; NOT_FOUND if it exited right now.
      entry.io_denied = io_text.status().code() == StatusCode::kPermissionDenied;
    } else if (ParseProcessIo(*io_text, &io).ok()) {
      AdvanceOne(ctx_, name(), "/proc/<pid>/io", entry.device, io.read_bytes,
                 kMaxStorageBytesPerSecond, interval_ns, &entry.read_count, &delta);
      AdvanceOne(ctx_, name(), "/proc/<pid>/io", entry.device, io.write_bytes,
                 kMaxStorageBytesPerSecond, interval_ns, &entry.write_count, &delta);
      SetCounter(entry.read_bytes, now_ns, entry.read_count.total);
      SetCounter(entry.written_bytes, now_ns, entry.write_count.total);
    } else {
      collectors_internal::ReportInvalid(ctx_, name(), "unparsable /proc/<pid>/io");
    }
  }
  return true;
}

Status ProcessCollector::Collect(int64_t now_ns) {
  ctx_.processes->SnapshotInto(&snapshot_);
  ++round_;
  for (const WatchedProcess& process : snapshot_) {
    auto it = entries_.find(process.pid);
    if (it == entries_.end()) {
      it = entries_.emplace(process.pid, std::make_unique<Entry>(*ctx_.env, process.pid)).first;
    }
    Entry& entry = *it->second;
    entry.round = round_;
    if (entry.gone && now_ns < entry.next_probe_ns) continue;
    if (CollectOne(entry, process, now_ns)) {
      entry.gone = false;
    } else if (!entry.gone) {
      // Vanished: forget its state quietly. While the agent still lists the pid, probe it only
      // once per kGoneProbeNs (a cheap failing open) in case the pid comes back.
      entry.gone = true;
      entry.cpu_ticks = entry.major_fault_count = entry.read_count = entry.write_count = {};
      entry.io_denied = false;
      entry.next_probe_ns = now_ns + kGoneProbeNs;
    } else {
      entry.next_probe_ns = now_ns + kGoneProbeNs;
    }
  }
  // Pids the agent no longer lists.
  std::erase_if(entries_, [this](const auto& item) { return item.second->round != round_; });
  return OkStatus();
}

size_t ProcessCollector::alive() const {
  return static_cast<size_t>(std::count_if(entries_.begin(), entries_.end(),
                                           [](const auto& item) { return !item.second->gone; }));
}

std::unique_ptr<Collector> MakeProcessCollector() { return std::make_unique<ProcessCollector>(); }

}  // namespace titan
