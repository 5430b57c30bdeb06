// The signals of the NVML (GPU) collector and the plausibility limits of their readings.
//
// Every per-GPU series is labelled {gpu, uuid} (gpu: the NVML index as text, uuid: NVML's
// "GPU-..." id, stable across reboots and index changes); counters split by a cause add one more
// label (reason, kind, xid). Units are base units: ratios 0..1, bytes, watts, joules, hertz,
// degrees Celsius, seconds.
//
// Thread safety: the descs are built once (thread-safe static initialisation) and never change
// or die, as MetricRegistry requires.
#pragma once

#include <array>
#include <cstdint>

#include "src/metrics/signal.h"

namespace titan {

struct NvmlSignalDescs {
  SignalDesc info;                // gauge 1 with {gpu, uuid, name}
  SignalDesc utilization;         // ratio of time a kernel ran
  SignalDesc memory_utilization;  // ratio of time device memory was read or written
  SignalDesc memory_used;         // bytes
  SignalDesc memory_total;        // bytes
  SignalDesc power;               // watts
  SignalDesc energy;              // joules, counter
  SignalDesc sm_clock;            // hertz
  SignalDesc memory_clock;        // hertz
  SignalDesc temperature;         // Celsius
  SignalDesc throttle;            // seconds with a clock event reason set, counter {reason}
  SignalDesc pcie_transmit;       // bytes per second
  SignalDesc pcie_receive;        // bytes per second
  SignalDesc ecc_errors;          // counter {kind: corrected|uncorrected}
  SignalDesc xid_errors;          // counter {xid}
};

// The descs (built on first use, never destroyed).
const NvmlSignalDescs& NvmlDescs();

// One clock event ("throttle") reason bit and its label value.
struct NvmlClockEventReason {
  uint64_t bit;
  const char* label;  // "sw_power_cap", ...
};
inline constexpr int kNvmlClockEventReasonCount = 9;
const std::array<NvmlClockEventReason, kNvmlClockEventReasonCount>& NvmlClockEventReasons();

// Plausibility limits. A reading outside them is a driver or hardware glitch (an issue reported
// "utilisation 808334905 %"): it is dropped and reported through ctx.invalid_sample.
inline constexpr double kNvmlMaxPercent = 100;
inline constexpr double kNvmlMaxPowerWatts = 5000;         // the largest modules draw ~2.7 kW
inline constexpr double kNvmlMaxTemperatureCelsius = 150;  // GPUs shut down near 100
inline constexpr double kNvmlMaxClockHertz = 20e9;
inline constexpr double kNvmlMaxPcieBytesPerSecond = 1e12;  // PCIe 6 x16 is ~0.13 TB/s
inline constexpr double kNvmlMaxMemoryBytes = 16.0 * (1ULL << 40);

// Sampling interval the flight-recorder rings of the utilisation and power series are sized
// for when the driver's sample buffer feeds them (power samples come every ~20 ms).
inline constexpr int64_t kNvmlDriverSampleIntervalNs = 20'000'000;

}  // namespace titan
