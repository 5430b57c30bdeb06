#include "src/collectors/disk_collector.h"

#include <sys/stat.h>

#include <algorithm>
#include <string>

#include "src/base/text.h"
#include "src/collectors/collector_support.h"

namespace titan {
namespace {

using collectors_internal::CounterDesc;
using collectors_internal::GaugeDesc;
using collectors_internal::ResettableCounter;

constexpr double kSectorBytes = 512;          // diskstats always counts 512-byte sectors
constexpr int64_t kTickSlackNs = 10'000'000;  // io_ticks advance in jiffies (10 ms at HZ=100)
constexpr uint64_t kMaxInFlight = 1 << 20;

// Counters exported per device, in this order.
enum Counter { kReadBytes, kWrittenBytes, kReads, kWrites, kReadTime, kWriteTime, kIoTime, kCount };
// The most each counter can grow per second on one block device: kMaxStorageBytesPerSecond of
// sectors (400 GB/s), kMaxStorageOpsPerSecond I/Os (1e8), and milliseconds of I/O time of up to
// kMaxInFlight I/Os at once; io_ms grows by at most 1000 per second, plus a tick, over short
// intervals (the busy ratio check refines it). A faster increase is a glitch and drops the
// interval.
constexpr double kMaxPerSecond[kCount] = {
    collectors_internal::kMaxStorageBytesPerSecond / kSectorBytes,
    collectors_internal::kMaxStorageBytesPerSecond / kSectorBytes,
    collectors_internal::kMaxStorageOpsPerSecond,
    collectors_internal::kMaxStorageOpsPerSecond,
    1e3 * kMaxInFlight,
    1e3 * kMaxInFlight,
    1e4};

struct Descs {
  SignalDesc counters[kCount] = {
      CounterDesc("titan_disk_read_bytes_total", "Bytes read.", {"device"}),
      CounterDesc("titan_disk_written_bytes_total", "Bytes written.", {"device"}),
      CounterDesc("titan_disk_reads_completed_total", "Reads completed.", {"device"}),
      CounterDesc("titan_disk_writes_completed_total", "Writes completed.", {"device"}),
      CounterDesc("titan_disk_read_time_seconds_total", "Time spent on reads (sum over requests).",
                  {"device"}),
      CounterDesc("titan_disk_write_time_seconds_total",
                  "Time spent on writes (sum over requests).", {"device"}),
      CounterDesc("titan_disk_io_time_seconds_total", "Time with at least one I/O in flight.",
                  {"device"}),
  };
  SignalDesc in_progress = GaugeDesc("titan_disk_io_in_progress", "I/Os in flight.", {"device"},
                                     {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  SignalDesc read_rate = GaugeDesc("titan_disk_read_bytes_per_second",
                                   "Read throughput over the last sampling interval.", {"device"},
                                   RateBuckets(20e9), /*detect=*/true);
  SignalDesc write_rate = GaugeDesc("titan_disk_written_bytes_per_second",
                                    "Write throughput over the last sampling interval.", {"device"},
                                    RateBuckets(20e9), /*detect=*/true);
  SignalDesc busy =
      GaugeDesc("titan_disk_busy_ratio", "Share of the last sampling interval with I/O in flight.",
                {"device"}, RatioBuckets(), /*detect=*/true);
};

const Descs& D() {
  static const Descs* descs = new Descs();
  return *descs;
}

bool HasPrefix(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Status ParseDiskstats(std::string_view text, std::vector<DiskStats>* out) {
  out->clear();
  int line_number = 0;
  while (!text.empty()) {
    std::string_view rest = NextLine(&text);
    ++line_number;
    if (Trim(rest).empty()) continue;
    uint64_t ids[2];
    bool bad = false;
    const int id_count = collectors_internal::ParseUintFields(&rest, ids, 2, &bad);
    DiskStats stats;
    stats.name = NextField(&rest);
    uint64_t v[11];
    const int n = collectors_internal::ParseUintFields(&rest, v, 11, &bad);
    if (id_count == 2 && !bad && n == 4 && NextField(&rest).empty()) continue;  // old partition
    if (id_count < 2 || bad || n < 11 || stats.name.empty() || ids[0] > UINT32_MAX ||
        ids[1] > UINT32_MAX) {
      return InvalidArgumentError("diskstats line " + std::to_string(line_number) +
                                  ": expected major, minor, name and at least 11 numeric fields");
    }
    stats.major = static_cast<uint32_t>(ids[0]);
    stats.minor = static_cast<uint32_t>(ids[1]);
    stats.reads = v[0], stats.reads_merged = v[1], stats.sectors_read = v[2], stats.read_ms = v[3];
    stats.writes = v[4], stats.writes_merged = v[5], stats.sectors_written = v[6];
    stats.write_ms = v[7], stats.in_flight = v[8], stats.io_ms = v[9], stats.weighted_io_ms = v[10];
    out->push_back(stats);
  }
  return OkStatus();
}

bool LooksLikePartition(std::string_view name) {
  size_t end = name.size();
  while (end > 0 && IsDigit(name[end - 1])) --end;
  if (end == name.size() || end == 0) return false;  // no trailing number, or only digits
  const std::string_view base = name.substr(0, end);
  // nvme0n1p1, mmcblk0p1: "p" after the disk's own number.
  if (base.size() >= 2 && base.back() == 'p' && IsDigit(base[base.size() - 2])) return true;
  // sda1, vdb2, hdc3, xvda1: letters after a known disk prefix.
  for (std::string_view prefix : {"sd", "vd", "hd", "xvd"}) {
    if (HasPrefix(base, prefix) && base.size() > prefix.size() &&
        std::all_of(base.begin() + static_cast<std::ptrdiff_t>(prefix.size()), base.end(),
                    [](char c) { return c >= 'a' && c <= 'z'; })) {
      return true;
    }
  }
  return false;
}

struct DiskCollector::Device {
  bool wanted = false;
  Series* counters[kCount] = {};
  Series* in_progress = nullptr;
  Series* read_rate = nullptr;
  Series* write_rate = nullptr;
  Series* busy = nullptr;
  ResettableCounter values[kCount];
  int64_t last_ns = 0;
};

struct DiskCollector::Table : collectors_internal::DeviceTable<DiskCollector::Device> {
  Table() : DeviceTable(kMaxDevices) {}
};

DiskCollector::DiskCollector(DiskCollectorOptions options) : options_(options) {}
DiskCollector::~DiskCollector() = default;

Status DiskCollector::Init(const CollectorContext& ctx) {
  ctx_ = ctx;
  struct stat st;
  have_sys_block_ = stat(ctx.env->SysPath("block").c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  reader_ = std::make_unique<FileReader>(ctx.env->ProcPath("diskstats"));
  table_ = std::make_unique<Table>();
  TITAN_RETURN_IF_ERROR(collectors_internal::ReadAndParse(*reader_, ParseDiskstats, &parsed_));
  return OkStatus();
}

bool DiskCollector::Wanted(std::string_view device) const {
  if (!options_.include_virtual) {
    for (std::string_view prefix : {"ram", "loop", "fd"}) {
      if (HasPrefix(device, prefix) && device.size() > prefix.size() &&
          std::all_of(device.begin() + static_cast<std::ptrdiff_t>(prefix.size()), device.end(),
                      IsDigit)) {
        return false;
      }
    }
  }
  if (options_.include_partitions) return true;
  if (have_sys_block_) {
    struct stat st;
    return stat(ctx_.env->SysPath("block/" + std::string(device)).c_str(), &st) == 0;
  }
  return !LooksLikePartition(device);
}

void DiskCollector::Resolve(Device& entry, std::string_view device) {
  entry.wanted = Wanted(device);
  if (!entry.wanted) return;
  MetricRegistry& r = *ctx_.registry;
  const LabelValues labels = {std::string(device)};
  for (int c = 0; c < kCount; ++c) {
    entry.counters[c] = r.GetOrCreate(D().counters[c], labels, ctx_.interval_ns);
  }
  entry.in_progress = r.GetOrCreate(D().in_progress, labels, ctx_.interval_ns);
  entry.read_rate = r.GetOrCreate(D().read_rate, labels, ctx_.interval_ns);
  entry.write_rate = r.GetOrCreate(D().write_rate, labels, ctx_.interval_ns);
  entry.busy = r.GetOrCreate(D().busy, labels, ctx_.interval_ns);
}

void DiskCollector::Record(Device& entry, const DiskStats& stats, int64_t now_ns) {
  using collectors_internal::RecordGauge;
  const uint64_t readings[kCount] = {stats.sectors_read, stats.sectors_written, stats.reads,
                                     stats.writes,       stats.read_ms,         stats.write_ms,
                                     stats.io_ms};
  constexpr double kScale[kCount] = {kSectorBytes, kSectorBytes, 1, 1, 1e-3, 1e-3, 1e-3};
  const int64_t interval_ns = now_ns - entry.last_ns;
  uint64_t delta[kCount];
  const bool have_delta =
      collectors_internal::AdvanceAll(ctx_, name(), "diskstats", stats.name, kCount, readings,
                                      kMaxPerSecond, interval_ns, entry.values, delta);
  for (int c = 0; c < kCount; ++c) {
    collectors_internal::SetCounter(entry.counters[c], now_ns, entry.values[c].total * kScale[c]);
  }
  if (stats.in_flight <= kMaxInFlight) {
    RecordGauge(entry.in_progress, now_ns, static_cast<double>(stats.in_flight));
  } else {
    collectors_internal::ReportInvalid(ctx_, name(), "diskstats in-flight count out of range");
  }
  entry.last_ns = now_ns;
  if (!have_delta || interval_ns <= 0) return;
  double rate = 0;
  collectors_internal::RatePerSecond(static_cast<double>(delta[kReadBytes]) * kSectorBytes,
                                     interval_ns, &rate);
  RecordGauge(entry.read_rate, now_ns, rate);
  collectors_internal::RatePerSecond(static_cast<double>(delta[kWrittenBytes]) * kSectorBytes,
                                     interval_ns, &rate);
  RecordGauge(entry.write_rate, now_ns, rate);
  const double busy = static_cast<double>(delta[kIoTime]) * 1e6 / static_cast<double>(interval_ns);
  const double slack = static_cast<double>(kTickSlackNs) / static_cast<double>(interval_ns);
  if (collectors_internal::PlausibleRatio(busy, slack)) {
    RecordGauge(entry.busy, now_ns, std::min(busy, 1.0));
  } else {
    collectors_internal::ReportInvalid(ctx_, name(), "disk busy ratio above 1");
  }
}

Status DiskCollector::Collect(int64_t now_ns) {
  TITAN_RETURN_IF_ERROR(collectors_internal::ReadAndParse(*reader_, ParseDiskstats, &parsed_));
  table_->BeginRound();
  for (const DiskStats& stats : parsed_) {
    bool created = false;
    Device* entry = table_->Find(stats.name, &created);
    if (entry == nullptr) {
      collectors_internal::ReportInvalid(ctx_, name(), "too many block devices; ignoring");
      continue;
    }
    if (created) Resolve(*entry, stats.name);
    if (entry->wanted) Record(*entry, stats, now_ns);
  }
  table_->EndRound();
  return OkStatus();
}

std::unique_ptr<Collector> MakeDiskCollector() { return std::make_unique<DiskCollector>(); }

}  // namespace titan
