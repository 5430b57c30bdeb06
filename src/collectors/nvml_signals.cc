#include "src/collectors/nvml_signals.h"

namespace titan {
namespace {

SignalDesc Gauge(const char* name, const char* help, std::vector<double> buckets, bool detect) {
  return SignalDesc{name, help, SignalKind::kGauge, {"gpu", "uuid"}, std::move(buckets), detect};
}
SignalDesc Counter(const char* name, const char* help, const char* extra_label) {
  return SignalDesc{name, help, SignalKind::kCounter, {"gpu", "uuid", extra_label}, {}, false};
}

NvmlSignalDescs Build() {
  NvmlSignalDescs d;
  d.info = SignalDesc{"titan_gpu_info",
                      "GPU identity (value 1): NVML index, UUID and product name",
                      SignalKind::kGauge,
                      {"gpu", "uuid", "name"},
                      {},
                      false};
  d.utilization =
      Gauge("titan_gpu_utilization_ratio",
            "Share of time one or more kernels ran on the GPU (NVML)", RatioBuckets(), true);
  d.memory_utilization =
      Gauge("titan_gpu_memory_utilization_ratio",
            "Share of time device memory was read or written (NVML)", RatioBuckets(), true);
  d.memory_used =
      Gauge("titan_gpu_memory_used_bytes", "Device memory in use (NVML)", BytesBuckets(), true);
  d.memory_total = Gauge("titan_gpu_memory_total_bytes", "Device memory size (NVML)", {}, false);
  d.power =
      Gauge("titan_gpu_power_watts", "Power drawn by the GPU (NVML)", RateBuckets(1024), true);
  d.energy = SignalDesc{"titan_gpu_energy_joules_total",
                        "Energy used by the GPU since the driver loaded (NVML)",
                        SignalKind::kCounter,
                        {"gpu", "uuid"},
                        {},
                        false};
  d.sm_clock = Gauge("titan_gpu_sm_clock_hertz", "SM clock (NVML)", {}, true);
  d.memory_clock = Gauge("titan_gpu_memory_clock_hertz", "Memory clock (NVML)", {}, false);
  d.temperature = Gauge("titan_gpu_temperature_celsius", "GPU die temperature (NVML)", {}, false);
  d.throttle =
      Counter("titan_gpu_throttle_seconds_total",
              "Time with a clock event (throttle) reason active, by reason (NVML)", "reason");
  d.pcie_transmit = Gauge("titan_gpu_pcie_transmit_bytes_per_second",
                          "PCIe bytes sent by the GPU per second, over a 20 ms window (NVML)",
                          RateBuckets(64e9), false);
  d.pcie_receive = Gauge("titan_gpu_pcie_receive_bytes_per_second",
                         "PCIe bytes received by the GPU per second, over a 20 ms window (NVML)",
                         RateBuckets(64e9), false);
  d.ecc_errors =
      Counter("titan_gpu_ecc_errors_total",
              "Device memory ECC errors since the driver loaded, by kind (NVML)", "kind");
  d.xid_errors = Counter("titan_gpu_xid_errors_total",
                         "XID critical errors reported by the driver, by XID", "xid");
  return d;
}

}  // namespace

const NvmlSignalDescs& NvmlDescs() {
  static const NvmlSignalDescs* const descs = new NvmlSignalDescs(Build());
  return *descs;
}

const std::array<NvmlClockEventReason, kNvmlClockEventReasonCount>& NvmlClockEventReasons() {
  static const std::array<NvmlClockEventReason, kNvmlClockEventReasonCount> reasons = {{
      {0x001, "gpu_idle"},
      {0x002, "applications_clocks_setting"},
      {0x004, "sw_power_cap"},
      {0x008, "hw_slowdown"},
      {0x010, "sync_boost"},
      {0x020, "sw_thermal_slowdown"},
      {0x040, "hw_thermal_slowdown"},
      {0x080, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"},
  }};
  return reasons;
}

}  // namespace titan
