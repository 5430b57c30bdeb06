// NvmlBackground: the NVML collector's second thread, for the two readings that must not run on
// the sampling thread:
//  - XID critical errors, which NVML delivers as events (nvmlEventSetWait_v2 blocks until one
//    arrives): each is counted in titan_gpu_xid_errors_total{gpu,uuid,xid} and logged;
//  - PCIe throughput, where each nvmlDeviceGetPcieThroughput call takes ~20 ms (the driver
//    counts bytes over a 20 ms window): read every `pcie_period_ns` for every GPU.
// Either part is skipped when the driver lacks its entry points or no GPU supports it.
//
// Ownership: borrows the library, registry and devices, which must outlive this object.
// Thread safety: the constructor starts the thread and the destructor stops and joins it (within
// one event-wait timeout, 100 ms). The public accessors are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "src/collectors/nvml_device.h"
#include "src/collectors/nvml_loader.h"
#include "src/metrics/registry.h"

namespace titan {

struct NvmlBackgroundOptions {
  bool watch_xid = true;
  bool poll_pcie = true;
  int64_t pcie_period_ns = 1'000'000'000;
  int64_t sample_interval_ns = 100'000'000;  // sizes the recorder rings of new series
  // Reports a rejected reading, as CollectorContext::invalid_sample (may be empty).
  std::function<void(std::string_view collector, std::string_view what)> invalid_sample;
};

class NvmlBackground {
 public:
  NvmlBackground(const NvmlLibrary& lib, MetricRegistry* registry,
                 const std::vector<NvmlDevice>& devices, NvmlBackgroundOptions options);
  ~NvmlBackground();
  NvmlBackground(const NvmlBackground&) = delete;
  NvmlBackground& operator=(const NvmlBackground&) = delete;

  // Whether XID events are being watched (the driver has the event API and at least one GPU
  // accepted the registration).
  bool watching_xid() const { return event_set_ != nullptr; }
  uint64_t xid_events() const { return xid_events_.load(); }

 private:
  void SetUpEvents();
  void Run();
  void PollPcie();
  void WaitForEvent();
  void RecordXid(const nvmlEventData_t& data);
  void SleepFor(int64_t duration_ns);

  const NvmlLibrary& lib_;
  MetricRegistry* const registry_;
  const std::vector<NvmlDevice>& devices_;
  const NvmlBackgroundOptions options_;

  nvmlEventSet_t event_set_ = nullptr;
  std::vector<bool> pcie_off_;  // per device: the driver said NOT_SUPPORTED
  std::map<std::pair<unsigned int, unsigned long long>, Series*> xid_series_;
  std::atomic<uint64_t> xid_events_{0};
  int consecutive_wait_errors_ = 0;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace titan
