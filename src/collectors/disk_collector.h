// disk: per-device block I/O from /proc/diskstats.
//
// Devices: whole disks only by default. A device is a whole disk when <sys>/block/<name> exists;
// where /sys/block is missing (some containers) names are classified instead (sda1, nvme0n1p1,
// mmcblk0p1 are partitions). ram*, loop* and fd* devices are skipped. Each name is classified once.
//
// Series (label device):
//   counters titan_disk_read_bytes_total, titan_disk_written_bytes_total (sectors x 512),
//            titan_disk_reads_completed_total, titan_disk_writes_completed_total,
//            titan_disk_read_time_seconds_total, titan_disk_write_time_seconds_total,
//            titan_disk_io_time_seconds_total (time with I/O in flight: io_ticks)
//   gauges   titan_disk_io_in_progress, titan_disk_read_bytes_per_second,
//            titan_disk_written_bytes_per_second,
//            titan_disk_busy_ratio (io_ticks delta / interval: 1 means saturated)
//
// Bad input: a busy ratio above 1 by more than one 10 ms tick, an in-flight count above 2^20
// (the unsigned underflow of some kernels) or a counter going backwards (device re-created) are
// dropped and reported via ctx.invalid_sample.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "src/base/env.h"
#include "src/base/status.h"
#include "src/collectors/collector.h"

namespace titan {

struct DiskStats {
  uint32_t major = 0, minor = 0;
  std::string_view name;  // points into the parsed text
  uint64_t reads = 0, reads_merged = 0, sectors_read = 0, read_ms = 0;
  uint64_t writes = 0, writes_merged = 0, sectors_written = 0, write_ms = 0;
  uint64_t in_flight = 0, io_ms = 0, weighted_io_ms = 0;
};

// Parses /proc/diskstats into *out (cleared; capacity reused). Lines need at least the 14 fields
// of Linux 2.6 (newer kernels add discard and flush columns, which are ignored); the 7-field
// partition lines of kernels before 2.6.25 are skipped. INVALID_ARGUMENT naming the line otherwise.
Status ParseDiskstats(std::string_view text, std::vector<DiskStats>* out);

// Whether `name` looks like a partition (sda1, vdb2, xvda1, nvme0n1p1, mmcblk0p1); used only
// where /sys/block is not available.
bool LooksLikePartition(std::string_view name);

struct DiskCollectorOptions {
  bool include_partitions = false;
  bool include_virtual = false;  // ram*, loop*, fd*
};

class DiskCollector : public Collector {
 public:
  static constexpr size_t kMaxDevices = 4096;

  explicit DiskCollector(DiskCollectorOptions options = {});
  ~DiskCollector() override;
  std::string_view name() const override { return "disk"; }
  // NOT_FOUND when <proc>/diskstats cannot be read; INVALID_ARGUMENT when it does not parse.
  Status Init(const CollectorContext& ctx) override;
  Status Collect(int64_t now_ns) override;

 private:
  struct Device;
  bool Wanted(std::string_view device) const;
  void Resolve(Device& entry, std::string_view device);
  void Record(Device& entry, const DiskStats& stats, int64_t now_ns);

  DiskCollectorOptions options_;
  CollectorContext ctx_;
  bool have_sys_block_ = false;
  std::unique_ptr<FileReader> reader_;
  std::vector<DiskStats> parsed_;
  struct Table;
  std::unique_ptr<Table> table_;
};

std::unique_ptr<Collector> MakeDiskCollector();

}  // namespace titan
