#include "src/collectors/nvml_loader.h"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace titan {
namespace {

// Resolves the first of `names` that the library exports into *slot; returns whether found.
template <typename Fn>
bool Resolve(void* handle, std::initializer_list<const char*> names, Fn* slot) {
  for (const char* name : names) {
    if (void* symbol = dlsym(handle, name)) {
      *slot = reinterpret_cast<Fn>(symbol);
      return true;
    }
  }
  return false;
}

}  // namespace

std::string DefaultNvmlLibraryPath() {
  const char* env = std::getenv("TITAN_NVML_LIBRARY");
  if (env != nullptr && env[0] != '\0') return env;
  return "libnvidia-ml.so.1";
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return FailedPreconditionError(
        fmt::format("NVML not found ({}): no GPU signals; everything else runs", path));
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary(handle, path));
  NvmlFunctions& fn = lib->fn_;
  std::vector<std::string> missing_core;
  auto core = [&](std::initializer_list<const char*> names, auto* slot) {
    if (!Resolve(handle, names, slot)) missing_core.emplace_back(*names.begin());
  };
  auto optional = [&](std::initializer_list<const char*> names, auto* slot) {
    if (!Resolve(handle, names, slot)) lib->missing_optional_.emplace_back(*names.begin());
  };
  core({"nvmlInit_v2"}, &fn.init);
  core({"nvmlShutdown"}, &fn.shutdown);
  core({"nvmlErrorString"}, &fn.error_string);
  core({"nvmlDeviceGetCount_v2"}, &fn.get_count);
  core({"nvmlDeviceGetHandleByIndex_v2"}, &fn.get_handle_by_index);
  if (!missing_core.empty()) {
    return FailedPreconditionError(
        fmt::format("NVML library {} lacks {}: the driver is too old or this is not libnvidia-ml; "
                    "no GPU signals (update the NVIDIA driver)",
                    path, fmt::join(missing_core, ", ")));
  }
  optional({"nvmlDeviceGetName"}, &fn.get_name);
  optional({"nvmlDeviceGetUUID"}, &fn.get_uuid);
  optional({"nvmlDeviceGetUtilizationRates"}, &fn.get_utilization_rates);
  optional({"nvmlDeviceGetMemoryInfo"}, &fn.get_memory_info);
  optional({"nvmlDeviceGetPowerUsage"}, &fn.get_power_usage);
  optional({"nvmlDeviceGetTotalEnergyConsumption"}, &fn.get_total_energy_consumption);
  optional({"nvmlDeviceGetClockInfo"}, &fn.get_clock_info);
  optional({"nvmlDeviceGetTemperature"}, &fn.get_temperature);
  optional({"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
           &fn.get_clocks_event_reasons);
  optional({"nvmlDeviceGetPcieThroughput"}, &fn.get_pcie_throughput);
  optional({"nvmlDeviceGetTotalEccErrors"}, &fn.get_total_ecc_errors);
  optional({"nvmlDeviceGetSamples"}, &fn.get_samples);
  optional({"nvmlEventSetCreate"}, &fn.event_set_create);
  optional({"nvmlDeviceRegisterEvents"}, &fn.register_events);
  optional({"nvmlEventSetWait_v2", "nvmlEventSetWait"}, &fn.event_set_wait);
  optional({"nvmlEventSetFree"}, &fn.event_set_free);
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string NvmlLibrary::Describe(const char* function, nvmlReturn_t result) const {
  const char* text = fn_.error_string != nullptr ? fn_.error_string(result) : nullptr;
  return fmt::format("{}: {} (code {})", function, text != nullptr ? text : "unknown error",
                     static_cast<int>(result));
}

}  // namespace titan
