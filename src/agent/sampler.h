// Sampler: runs each collector on its own thread at its own interval, so a slow source (an NVML
// call stuck in the driver) never delays another. Ticks are on an absolute monotonic schedule;
// a Collect() that outlasts its interval skips the missed ticks (counted in
// titan_collector_overruns_total) instead of bunching samples.
//
// Self-metrics per collector (node_exporter style): titan_collector_up,
// titan_collector_duration_seconds (with window max: a slow scrape of /proc is a transient too),
// titan_collector_errors_total, titan_collector_overruns_total.
//
// Thread safety: Start/Stop/Statuses from one controlling thread; collectors run on their own.
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
};

class Sampler {
 public:
  explicit Sampler(CollectorContext base_context);
  ~Sampler();  // Stop()

  // Inits every collector; the unavailable ones are logged once and reported down. Starts a
  // thread for each of the others.
  void Start(std::vector<CollectorSpec> specs);
  void Stop();
  std::vector<CollectorStatus> Statuses() const;
  // Records titan_collector_up for every collector (called periodically by the agent so that
  // down collectors stay visible).
  void RecordUp(int64_t now_ns);

 private:
  struct Slot {
    CollectorSpec spec;
    CollectorStatus status;
    Series* up = nullptr;
    Series* duration = nullptr;
    Series* errors = nullptr;
    Series* overruns = nullptr;
    std::atomic<uint64_t> rounds{0};
    std::atomic<uint64_t> error_count{0};
    std::thread thread;
  };
  void Loop(Slot* slot);

  CollectorContext base_context_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

}  // namespace titan
