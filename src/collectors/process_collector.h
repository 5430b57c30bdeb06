// process: resource use of the training processes registered with the agent (ctx.processes),
// from /proc/<pid>/{stat,status,io}.
//
// Series (labels rank, pid; rank is "-1" when unknown):
//   counters titan_process_cpu_seconds_total (utime + stime), titan_process_read_bytes_total /
//            titan_process_written_bytes_total (storage I/O: read_bytes / write_bytes of io),
//            titan_process_major_page_faults_total
//   gauges   titan_process_resident_memory_bytes (VmRSS), titan_process_cpu_cores (CPU seconds
//            per second over the last interval), titan_process_threads
//
// A pid that vanished is skipped quietly and its state forgotten (its gauges go stale); while the
// agent still lists it, it is probed again once a second. A reused pid (different start time)
// starts afresh. /proc/<pid>/io needs ptrace access: where it is
// denied, I/O series are left out for that process without an error. Collect() never fails because
// of one process; unparsable files are reported via ctx.invalid_sample. Counters are
// collectors_internal::MonotonicCounters with a bound per field (see process_collector.cc): a
// glitch (2^64-1) is not exported and is reported (titan_collector_readings_dropped_total).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/base/env.h"
#include "src/base/status.h"
#include "src/collectors/collector.h"
#include "src/collectors/watched_processes.h"

namespace titan {

// Selected fields of /proc/<pid>/stat (field numbers as in proc(5)).
struct ProcessStat {
  int64_t pid = 0;
  char state = '?';
  uint64_t major_faults = 0;  // 12 majflt
  uint64_t utime_ticks = 0;   // 14
  uint64_t stime_ticks = 0;   // 15
  uint64_t threads = 0;       // 20
  uint64_t start_ticks = 0;   // 22 starttime, ticks after boot
  uint64_t rss_pages = 0;     // 24
};
// Parses /proc/<pid>/stat; the command name may hold spaces and parentheses (the last ')' ends
// it). INVALID_ARGUMENT when fields are missing or not numbers.
Status ParseProcessStat(std::string_view text, ProcessStat* out);

// VmRSS of /proc/<pid>/status in bytes. NOT_FOUND when absent (kernel threads, zombies).
Status ParseProcessStatusRss(std::string_view text, uint64_t* rss_bytes);

struct ProcessIo {
  uint64_t read_bytes = 0, write_bytes = 0;
};
// /proc/<pid>/io. INVALID_ARGUMENT when read_bytes or write_bytes is missing or malformed.
Status ParseProcessIo(std::string_view text, ProcessIo* out);

class ProcessCollector : public Collector {
 public:
  ProcessCollector();
  ~ProcessCollector() override;
  std::string_view name() const override { return "process"; }
  // FAILED_PRECONDITION when ctx.processes is null.
  Status Init(const CollectorContext& ctx) override;
  Status Collect(int64_t now_ns) override;
  // Watched processes that were alive at their last sample.
  size_t alive() const;

 private:
  struct Entry;
  // False when the process is gone.
  bool CollectOne(Entry& entry, const WatchedProcess& process, int64_t now_ns);
  void Resolve(Entry& entry, const WatchedProcess& process);

  CollectorContext ctx_;
  double ticks_per_second_ = 100;
  uint64_t page_bytes_ = 4096;
  double max_ticks_per_second_ = 0;  // the bound of one process' CPU ticks
  std::vector<WatchedProcess> snapshot_;
  std::unordered_map<pid_t, std::unique_ptr<Entry>> entries_;
  uint64_t round_ = 0;
};

std::unique_ptr<Collector> MakeProcessCollector();

}  // namespace titan
