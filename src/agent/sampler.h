// Sampler: runs each collector on its own thread at its own interval, so a slow source (an NVML
// call stuck in the driver) never delays another. Ticks are on an absolute monotonic schedule;
// a Collect() that outlasts its interval skips the missed ticks (counted in
// titan_collector_overruns_total) instead of bunching samples.
//
// Self-metrics per collector (node_exporter style): titan_collector_up,
// titan_collector_duration_seconds (with window max: a slow scrape of /proc is a transient too),
// titan_collector_errors_total, titan_collector_overruns_total, titan_collector_stuck_total.
//
// Failing collectors: after kDownAfterFailures consecutive failed Collect() calls RecordUp()
// reports titan_collector_up 0 (and logs it once); the first call that succeeds brings it back to
// 1 at the next RecordUp() (logged too). Fewer failures in a row (one unreadable sample) leave it
// up; they are counted in titan_collector_errors_total either way.
//
// Stuck collectors: a Collect() that has not returned for max(10 intervals, stuck_after_min_ns)
// (an NVML call hanging on a GPU that fell off the bus, a read of a hung NFS mount's stats) is
// reported by RecordUp(): one warning naming the collector and how long it has been inside one
// call, titan_collector_stuck_total + 1, and titan_collector_up 0 until the call returns (then
// an info line says it recovered). Its series go stale; the other collectors are unaffected.
// Stop() does not wait for a stuck collector: its thread is detached and its slot abandoned (the
// process is about to exit; if the call ever returns, it finds the slot still allocated).
//
// Thread safety: Start/Stop/Statuses/RecordUp from one controlling thread; collectors run on
// their own.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/collectors/collector.h"

namespace titan {

struct CollectorSpec {
  std::unique_ptr<Collector> collector;
  int64_t interval_ns;
};

struct CollectorStatus {
  std::string name;
  bool running = false;  // Init() succeeded and its thread samples
  int64_t interval_ns = 0;
  std::string init_error;  // why it is not running (empty when running)
  uint64_t rounds = 0;
  uint64_t errors = 0;
  uint64_t consecutive_errors = 0;  // failed Collect() calls since the last one that succeeded
  double stuck_seconds = 0;         // > 0: inside one Collect() for this long, past the stuck bound
};

// Consecutive failed Collect() calls after which a collector is reported down.
inline constexpr uint64_t kDownAfterFailures = 3;

struct SamplerOptions {
  // A collector is stuck after max(10 intervals, this) inside one Collect().
  int64_t stuck_after_min_ns = 5'000'000'000;
};

class Sampler {
 public:
  explicit Sampler(CollectorContext base_context, SamplerOptions options = {});
  ~Sampler();  // Stop()

  // Inits every collector; the unavailable ones are logged once and reported down. Starts a
  // thread for each of the others.
  void Start(std::vector<CollectorSpec> specs);
  void Stop();
  std::vector<CollectorStatus> Statuses() const;
  // Records titan_collector_up for every collector (called periodically by the agent so that
  // down collectors stay visible) and reports collectors that became stuck or recovered.
  void RecordUp(int64_t now_ns);

 private:
  struct Slot {
    CollectorSpec spec;
    CollectorStatus status;
    Series* up = nullptr;
    Series* duration = nullptr;
    Series* errors = nullptr;
    Series* overruns = nullptr;
    Series* stuck = nullptr;
    // Monotonic start of the Collect() in progress; 0 between calls.
    std::atomic<int64_t> collect_begin_ns{0};
    bool reported_stuck = false;    // RecordUp's thread only
    bool reported_failing = false;  // RecordUp's thread only
    std::atomic<uint64_t> rounds{0};
    std::atomic<uint64_t> error_count{0};
    std::atomic<uint64_t> consecutive_errors{0};  // reset by a Collect() that succeeds
    std::thread thread;
  };
  void Loop(Slot* slot);
  // How long `slot` has been inside its current Collect() if that is past the stuck bound,
  // else 0.
  int64_t StuckForNs(const Slot& slot, int64_t mono_now_ns) const;

  CollectorContext base_context_;
  SamplerOptions options_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

}  // namespace titan
