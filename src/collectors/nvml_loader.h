// NvmlLibrary: libnvidia-ml loaded at run time with dlopen(), its entry points resolved with
// dlsym(). No CUDA toolkit or NVML header is needed to build titan.
//
// Core entry points (init, shutdown, device count, device handle, error string) must all exist;
// every other one is optional: a null pointer here means "this driver lacks it" and the caller
// disables the signal it feeds. Newer names are preferred where NVML renamed a function
// (nvmlDeviceGetCurrentClocksEventReasons over ...ThrottleReasons, nvmlEventSetWait_v2 over
// nvmlEventSetWait); both forms have the same signature.
//
// Ownership: the library handle is closed (dlclose) by the destructor; the caller must have
// called nvmlShutdown (via Shutdown()) and stopped every thread using the pointers before.
// Thread safety: the function pointers are immutable after Load(); NVML itself is thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/collectors/nvml_api.h"

namespace titan {

// The library path used when none is given: $TITAN_NVML_LIBRARY if set and non-empty, else
// "libnvidia-ml.so.1" (found through the dynamic loader's search path).
std::string DefaultNvmlLibraryPath();

struct NvmlFunctions {
  // Core.
  nvmlInit_v2Fn init = nullptr;
  nvmlShutdownFn shutdown = nullptr;
  nvmlErrorStringFn error_string = nullptr;
  nvmlDeviceGetCount_v2Fn get_count = nullptr;
  nvmlDeviceGetHandleByIndex_v2Fn get_handle_by_index = nullptr;
  // Optional.
  nvmlDeviceGetNameFn get_name = nullptr;
  nvmlDeviceGetUUIDFn get_uuid = nullptr;
  nvmlDeviceGetUtilizationRatesFn get_utilization_rates = nullptr;
  nvmlDeviceGetMemoryInfoFn get_memory_info = nullptr;
  nvmlDeviceGetPowerUsageFn get_power_usage = nullptr;
  nvmlDeviceGetTotalEnergyConsumptionFn get_total_energy_consumption = nullptr;
  nvmlDeviceGetClockInfoFn get_clock_info = nullptr;
  nvmlDeviceGetTemperatureFn get_temperature = nullptr;
  nvmlDeviceGetClocksEventReasonsFn get_clocks_event_reasons = nullptr;
  nvmlDeviceGetPcieThroughputFn get_pcie_throughput = nullptr;
  nvmlDeviceGetTotalEccErrorsFn get_total_ecc_errors = nullptr;
  nvmlDeviceGetSamplesFn get_samples = nullptr;
  nvmlEventSetCreateFn event_set_create = nullptr;
  nvmlDeviceRegisterEventsFn register_events = nullptr;
  nvmlEventSetWait_v2Fn event_set_wait = nullptr;
  nvmlEventSetFreeFn event_set_free = nullptr;
};

class NvmlLibrary {
 public:
  // Opens `path` and resolves every entry point. Errors (all FAILED_PRECONDITION):
  //  - the library cannot be opened: "NVML not found (<path>): no GPU signals; everything else
  //    runs" (dlerror() detail is available from last_dlerror());
  //  - a core entry point is missing: the message names it.
  // Does not call nvmlInit.
  static Result<std::unique_ptr<NvmlLibrary>> Load(const std::string& path);

  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlFunctions& fn() const { return fn_; }
  const std::string& path() const { return path_; }
  // Names of optional entry points this library lacks (each disables one signal).
  const std::vector<std::string>& missing_optional() const { return missing_optional_; }
  // "nvmlDeviceGetTemperature: Not Supported (code 3)".
  std::string Describe(const char* function, nvmlReturn_t result) const;

 private:
  NvmlLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
  NvmlFunctions fn_;
  std::vector<std::string> missing_optional_;
};

}  // namespace titan
