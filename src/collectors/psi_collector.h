// psi: pressure stall information from /proc/pressure/{cpu,memory,io} (Linux 4.20+, CONFIG_PSI).
//
// Sampled series (labels resource, kind="some"|"full"):
//   titan_pressure_stall_seconds_total  counter from the `total=` microseconds
//   titan_pressure_stall_ratio          gauge: stalled share of the last sampling interval, from
//                                       `total=` deltas (sub-second; avg10 smooths over 10 s)
//   titan_pressure_avg10_ratio          gauge: the kernel's 10 s average / 100
// Event-driven series (label resource):
//   titan_pressure_stall_events_total   counter of PSI trigger notifications
//   titan_pressure_trigger_active       gauge: 1 while the kernel trigger is armed, else 0
//
// Triggers: Init() writes "<kind> <threshold_us> <window_us>" to each pressure file opened
// O_RDWR|O_NONBLOCK and a dedicated thread (owned by the collector, joined by its destructor)
// poll()s them for POLLPRI. Each notification is counted and its wall-clock time kept in a ring
// of the last kMaxRecentEvents, readable from any thread with RecentStallEvents(). Without
// CAP_SYS_RESOURCE, Linux 6.5+ accepts only windows of whole 2 s multiples: the window is then
// widened to the next one, keeping the threshold's share of it, and that is logged. Where the
// kernel refuses a trigger (EPERM without CAP_SYS_RESOURCE before 6.5, a read-only /proc in a
// container, a file that is not on procfs such as a test fixture), Init() logs the reason once,
// trigger_active stays 0 and the resource is only sampled.
//
// Errors: Init() returns FAILED_PRECONDITION when no pressure file can be read (kernel without
// PSI, or booted with psi=0). A resource whose file vanishes later fails Collect() with NOT_FOUND.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "src/base/env.h"
#include "src/base/status.h"
#include "src/collectors/collector.h"

namespace titan {

struct PressureLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;  // percent
  uint64_t total_us = 0;
};

struct Pressure {
  bool has_some = false, has_full = false;  // cpu has no "full" line before Linux 5.13
  PressureLine some, full;
};

// Parses one /proc/pressure file. INVALID_ARGUMENT naming the line when a "some"/"full" line lacks
// total= or has a malformed number, or when no such line exists. Unknown fields are ignored.
Status ParsePressure(std::string_view text, Pressure* out);

struct PsiCollectorOptions {
  bool triggers = true;
  std::string trigger_kind = "some";  // "some" or "full"
  int64_t trigger_threshold_us = 50'000;
  int64_t trigger_window_us = 1'000'000;  // the kernel accepts 500 ms .. 10 s
};

struct StallEvent {
  int64_t time_ns;            // wall clock when the notification was received
  std::string_view resource;  // "cpu", "memory", "io" (static storage)
};

class PsiCollector : public Collector {
 public:
  static constexpr size_t kMaxRecentEvents = 256;

  explicit PsiCollector(PsiCollectorOptions options = {});
  ~PsiCollector() override;  // stops and joins the trigger thread
  std::string_view name() const override { return "psi"; }
  Status Init(const CollectorContext& ctx) override;
  Status Collect(int64_t now_ns) override;

  // Trigger notifications received at or after `since_ns`, oldest first (at most
  // kMaxRecentEvents). Thread-safe.
  std::vector<StallEvent> RecentStallEvents(int64_t since_ns) const;
  // Number of resources with an armed trigger. Thread-safe.
  int active_triggers() const { return active_triggers_.load(); }

 private:
  struct Resource;
  Status ArmTrigger(Resource& resource);
  void TriggerLoop();
  void OnTrigger(Resource& resource);

  PsiCollectorOptions options_;
  CollectorContext ctx_;
  std::vector<std::unique_ptr<Resource>> resources_;
  Pressure parsed_;

  int stop_fd_ = -1;  // eventfd that wakes the trigger thread to stop
  std::thread thread_;
  std::atomic<int> active_triggers_{0};
  mutable std::mutex events_mutex_;
  std::vector<StallEvent> events_;  // ring of kMaxRecentEvents
  size_t events_next_ = 0;
};

std::unique_ptr<Collector> MakePsiCollector();

}  // namespace titan
