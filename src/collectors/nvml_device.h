// NvmlDevice: one GPU as the NVML collector sees it: its NVML handle, its labels and the series
// that more than one thread writes to. Built by NvmlCollector::Init() and immutable afterwards,
// so the sampling thread and the background thread (nvml_background.h) may both read it.
#pragma once

#include <string>

#include "src/collectors/nvml_api.h"
#include "src/metrics/series.h"

namespace titan {

struct NvmlDevice {
  unsigned int index = 0;
  nvmlDevice_t handle = nullptr;
  std::string gpu;   // label value: the index as text
  std::string uuid;  // label value: "GPU-..." ("" when NVML cannot say)
  std::string name;  // product name, e.g. "NVIDIA H200"
  // Written by the background thread; nullptr when the registry is full or the signal is off.
  Series* pcie_transmit = nullptr;
  Series* pcie_receive = nullptr;
};

// Records `value` into `series` unless it is null (registry full).
inline void RecordNvmlGauge(Series* series, int64_t time_ns, double value) {
  if (series != nullptr) series->RecordGauge(time_ns, value);
}

}  // namespace titan
