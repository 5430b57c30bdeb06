#include "src/collectors/nvml_background.h"

#include <algorithm>
#include <chrono>
#include <string>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/collectors/nvml_signals.h"

namespace titan {
namespace {

constexpr unsigned int kEventWaitTimeoutMs = 100;
constexpr size_t kMaxXidSeries = 1024;
constexpr int kMaxConsecutiveWaitErrors = 50;

}  // namespace

NvmlBackground::NvmlBackground(const NvmlLibrary& lib, MetricRegistry* registry,
                               const std::vector<NvmlDevice>& devices,
                               NvmlBackgroundOptions options)
    : lib_(lib),
      registry_(registry),
      devices_(devices),
      options_(std::move(options)),
      pcie_off_(devices.size(), lib.fn().get_pcie_throughput == nullptr || !options_.poll_pcie) {
  if (options_.watch_xid) SetUpEvents();
  thread_ = std::thread([this] { Run(); });
}

NvmlBackground::~NvmlBackground() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (event_set_ != nullptr && lib_.fn().event_set_free != nullptr) {
    lib_.fn().event_set_free(event_set_);
  }
}

void NvmlBackground::SetUpEvents() {
  const NvmlFunctions& fn = lib_.fn();
  if (fn.event_set_create == nullptr || fn.register_events == nullptr ||
      fn.event_set_wait == nullptr || fn.event_set_free == nullptr) {
    return;  // the collector already logged the missing entry points
  }
  nvmlEventSet_t set = nullptr;
  if (nvmlReturn_t r = fn.event_set_create(&set); r != NVML_SUCCESS) {
    Log(LogLevel::kWarning, "nvml", "{}: XID errors will not be counted",
        lib_.Describe("nvmlEventSetCreate", r));
    return;
  }
  int registered = 0;
  for (const NvmlDevice& device : devices_) {
    nvmlReturn_t r =
        fn.register_events(device.handle, TITAN_NVML_EVENT_TYPE_XID_CRITICAL_ERROR, set);
    if (r == NVML_SUCCESS) {
      ++registered;
    } else {
      Log(LogLevel::kInfo, "nvml", "gpu {}: {}: XID errors of this GPU will not be counted",
          device.gpu, lib_.Describe("nvmlDeviceRegisterEvents", r));
    }
  }
  if (registered == 0) {
    fn.event_set_free(set);
    return;
  }
  event_set_ = set;
}

void NvmlBackground::Run() {
  const bool any_pcie = std::find(pcie_off_.begin(), pcie_off_.end(), false) != pcie_off_.end();
  if (!any_pcie && event_set_ == nullptr) return;
  int64_t next_pcie_ns = MonoNowNs();
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_) return;
    }
    if (any_pcie && MonoNowNs() >= next_pcie_ns) {
      PollPcie();
      next_pcie_ns = std::max(next_pcie_ns + options_.pcie_period_ns, MonoNowNs());
    }
    if (event_set_ != nullptr && consecutive_wait_errors_ < kMaxConsecutiveWaitErrors) {
      WaitForEvent();
    } else {
      SleepFor(any_pcie ? std::max<int64_t>(next_pcie_ns - MonoNowNs(), 0)
                        : kEventWaitTimeoutMs * kNsPerMs);
    }
  }
}

void NvmlBackground::SleepFor(int64_t duration_ns) {
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait_for(lock, std::chrono::nanoseconds(duration_ns), [this] { return stop_; });
}

void NvmlBackground::PollPcie() {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (pcie_off_[i]) continue;
    const NvmlDevice& device = devices_[i];
    struct Direction {
      nvmlPcieUtilCounter_t counter;
      Series* series;
      const char* what;
    };
    for (const Direction& d : {Direction{NVML_PCIE_UTIL_TX_BYTES, device.pcie_transmit, "tx"},
                               Direction{NVML_PCIE_UTIL_RX_BYTES, device.pcie_receive, "rx"}}) {
      unsigned int kb_per_s = 0;
      const nvmlReturn_t r = lib_.fn().get_pcie_throughput(device.handle, d.counter, &kb_per_s);
      if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION) {
        Log(LogLevel::kInfo, "nvml", "gpu {}: {}: PCIe throughput of this GPU is off", device.gpu,
            lib_.Describe("nvmlDeviceGetPcieThroughput", r));
        pcie_off_[i] = true;
        break;
      }
      if (r != NVML_SUCCESS) continue;  // transient; the next period retries
      const double bytes_per_s = static_cast<double>(kb_per_s) * 1024.0;
      if (bytes_per_s > kNvmlMaxPcieBytesPerSecond) {
        if (options_.invalid_sample) {
          options_.invalid_sample(
              "nvml", fmt::format("gpu {}: PCIe {} {} KB/s (limit {} B/s)", device.gpu, d.what,
                                  kb_per_s, kNvmlMaxPcieBytesPerSecond));
        }
        continue;
      }
      RecordNvmlGauge(d.series, WallNowNs(), bytes_per_s);
    }
  }
}

void NvmlBackground::WaitForEvent() {
  nvmlEventData_t data{};
  const nvmlReturn_t r = lib_.fn().event_set_wait(event_set_, &data, kEventWaitTimeoutMs);
  if (r == NVML_ERROR_TIMEOUT) {
    consecutive_wait_errors_ = 0;
    return;
  }
  if (r != NVML_SUCCESS) {
    // Keeps a broken event API from spinning: back off, and give up after many failures in a row.
    if (++consecutive_wait_errors_ == kMaxConsecutiveWaitErrors) {
      Log(LogLevel::kWarning, "nvml", "{} failed {} times in a row: XID errors no longer counted",
          lib_.Describe("nvmlEventSetWait_v2", r), kMaxConsecutiveWaitErrors);
    }
    SleepFor(kEventWaitTimeoutMs * kNsPerMs);
    return;
  }
  consecutive_wait_errors_ = 0;
  if ((data.eventType & TITAN_NVML_EVENT_TYPE_XID_CRITICAL_ERROR) != 0) RecordXid(data);
}

void NvmlBackground::RecordXid(const nvmlEventData_t& data) {
  const NvmlDevice* device = nullptr;
  for (const NvmlDevice& d : devices_) {
    if (d.handle == data.device) device = &d;
  }
  if (device == nullptr) return;  // not one of ours (cannot happen with our own event set)
  xid_events_.fetch_add(1);
  Log(LogLevel::kWarning, "nvml", "gpu {} ({}): XID {} critical error reported by the driver",
      device->gpu, device->uuid, data.eventData);
  const auto key = std::make_pair(device->index, data.eventData);
  auto it = xid_series_.find(key);
  if (it == xid_series_.end()) {
    // XIDs are small driver-defined numbers; a flood of distinct values is folded into "other".
    const std::string xid =
        xid_series_.size() < kMaxXidSeries ? std::to_string(data.eventData) : "other";
    Series* series = registry_->GetOrCreate(
        NvmlDescs().xid_errors, {device->gpu, device->uuid, xid}, options_.sample_interval_ns);
    it = xid_series_.emplace(key, series).first;
  }
  if (it->second != nullptr) it->second->AddCounter(WallNowNs(), 1);
}

}  // namespace titan
