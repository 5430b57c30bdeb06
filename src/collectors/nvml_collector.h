// The GPU collector of `titan agent`: NVML (libnvidia-ml.so.1, loaded with dlopen at run time, so
// no CUDA toolkit is needed to build or run titan).
//
// Signals per GPU, labelled {gpu, uuid} (see nvml_signals.h): utilisation, memory utilisation,
// memory used/total, power, energy (counter), SM and memory clocks, temperature, time per clock
// event ("throttle") reason (counter), PCIe transmit/receive rate, ECC errors (counter), XID
// errors (counter) and titan_gpu_info{gpu,uuid,name}.
//
// Sub-interval peaks: where the driver buffers samples (nvmlDeviceGetSamples: GPU utilisation
// every ~1/6 s, power every ~20 ms) each buffered sample is recorded at its own driver timestamp,
// so the flight recorder and the window max/min see dips and spikes shorter than the sampling
// interval; a cursor per GPU (the driver's lastSeenTimeStamp) makes each sample count once.
// Without the buffer (old driver, NOT_SUPPORTED), or while it has had no new sample for 1 s, one
// instantaneous reading per Collect() is recorded instead.
//
// Errors: Init() returns FAILED_PRECONDITION when there is no libnvidia-ml ("NVML not found
// (libnvidia-ml.so.1): no GPU signals; everything else runs"), when a core entry point is missing,
// when nvmlInit fails (driver not loaded) or when NVML lists no GPU; the collector itself logs
// nothing in that case (the agent reports it once). A missing optional entry point, or a GPU
// answering NOT_SUPPORTED, disables just that signal (logged once). Implausible readings are
// dropped and reported through ctx.invalid_sample. Collect() returns UNAVAILABLE naming the first
// failed NVML call but still records every signal that could be read.
//
// Threads: Collect() runs on the agent's sampling thread; a background thread waits for XID
// events and reads PCIe throughput (nvml_background.h). The destructor stops it, calls
// nvmlShutdown and unloads the library.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "src/collectors/collector.h"

namespace titan {

struct NvmlCollectorOptions {
  // Path given to dlopen(). Empty: $TITAN_NVML_LIBRARY, else "libnvidia-ml.so.1".
  std::string library_path;
  bool watch_xid = true;                   // count XID errors (background thread)
  bool poll_pcie = true;                   // read PCIe throughput (background thread)
  int64_t pcie_period_ns = 1'000'000'000;  // how often; each GPU costs ~40 ms of driver time
};

std::unique_ptr<Collector> MakeNvmlCollector();
std::unique_ptr<Collector> MakeNvmlCollector(std::string library_path);
std::unique_ptr<Collector> MakeNvmlCollector(NvmlCollectorOptions options);

}  // namespace titan
