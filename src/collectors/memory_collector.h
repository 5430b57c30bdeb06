// memory: system memory from /proc/meminfo and paging activity from /proc/vmstat.
//
// Gauges: titan_memory_used_bytes (MemTotal - MemAvailable), titan_memory_available_bytes,
// titan_memory_total_bytes, titan_memory_dirty_bytes, titan_memory_writeback_bytes,
// titan_memory_swap_used_bytes. Counters: titan_memory_page_faults_total,
// titan_memory_major_page_faults_total, titan_memory_paged_in_bytes_total /
// titan_memory_paged_out_bytes_total (pgpgin/pgpgout, which the kernel reports in KiB),
// titan_memory_swapped_in_bytes_total / titan_memory_swapped_out_bytes_total (pswpin/pswpout
// pages), titan_memory_oom_kills_total.
//
// Kernels before 3.14 lack MemAvailable: it is then estimated as MemFree + Buffers + Cached.
// Bad input: MemAvailable > MemTotal is dropped and reported via ctx.invalid_sample; vmstat
// counters are collectors_internal::MonotonicCounters with a bound per field (see
// memory_collector.cc): one going back keeps its previous value, a glitch (2^64-1) is not
// exported; both are reported (ctx.invalid_sample, titan_collector_readings_dropped_total). An
// unparsable file fails Collect() with INVALID_ARGUMENT.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "src/base/env.h"
#include "src/base/status.h"
#include "src/collectors/collector.h"

namespace titan {

// Selected /proc/meminfo fields, in bytes. A field is valid when its bit in `present` is set.
struct Meminfo {
  enum Field : uint32_t {
    kMemTotal,
    kMemFree,
    kMemAvailable,
    kBuffers,
    kCached,
    kDirty,
    kWriteback,
    kSwapTotal,
    kSwapFree,
    kFieldCount
  };
  uint64_t value[kFieldCount] = {};
  uint32_t present = 0;
  bool Has(Field f) const { return (present >> f) & 1; }
  uint64_t Get(Field f) const { return value[f]; }
};

// Parses /proc/meminfo. INVALID_ARGUMENT (naming the line) when a wanted field's value is not a
// number or overflows when converted from kB, or when MemTotal is missing. Unknown keys are
// skipped.
Status ParseMeminfo(std::string_view text, Meminfo* out);

// Selected /proc/vmstat counters as the kernel prints them (pgpgin/out in KiB, pswpin/out in
// pages).
struct Vmstat {
  enum Field : uint32_t {
    kPgfault,
    kPgmajfault,
    kPgpgin,
    kPgpgout,
    kPswpin,
    kPswpout,
    kOomKill,
    kFieldCount
  };
  uint64_t value[kFieldCount] = {};
  uint32_t present = 0;
  bool Has(Field f) const { return (present >> f) & 1; }
};

// Parses /proc/vmstat ("name value" lines). INVALID_ARGUMENT (naming the line) when a wanted
// counter's value is not a number or when pgfault is missing.
Status ParseVmstat(std::string_view text, Vmstat* out);

class MemoryCollector : public Collector {
 public:
  MemoryCollector();
  ~MemoryCollector() override;
  std::string_view name() const override { return "memory"; }
  // NOT_FOUND when <proc>/meminfo or <proc>/vmstat cannot be read; INVALID_ARGUMENT when they do
  // not parse.
  Status Init(const CollectorContext& ctx) override;
  Status Collect(int64_t now_ns) override;

 private:
  void RecordMeminfo(int64_t now_ns);
  void RecordVmstat(int64_t now_ns);

  CollectorContext ctx_;
  uint64_t page_bytes_ = 4096;
  std::unique_ptr<FileReader> meminfo_reader_;
  std::unique_ptr<FileReader> vmstat_reader_;
  Meminfo meminfo_;
  Vmstat vmstat_;
  struct State;
  std::unique_ptr<State> state_;
};

std::unique_ptr<Collector> MakeMemoryCollector();

}  // namespace titan
