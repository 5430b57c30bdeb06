#include "src/collectors/collector_registry.h"

#include <string>

#include "src/collectors/cpu_collector.h"
#include "src/collectors/disk_collector.h"
#include "src/collectors/infiniband_collector.h"
#include "src/collectors/memory_collector.h"
#include "src/collectors/net_collector.h"
#include "src/collectors/nvml_collector.h"
#include "src/collectors/process_collector.h"
#include "src/collectors/psi_collector.h"

namespace titan {
namespace {

constexpr int64_t kMs = 1'000'000;

constexpr CollectorInfo kCollectors[] = {
    {"cpu", "CPU utilisation, busy and iowait time per core (/proc/stat)", 100 * kMs,
     &MakeCpuCollector},
    {"memory", "memory use, dirty/writeback pages, faults, paging, swap (/proc/meminfo, vmstat)",
     100 * kMs, &MakeMemoryCollector},
    {"net", "per-interface traffic, drops, errors and throughput (/proc/net/dev)", 100 * kMs,
     &MakeNetCollector},
    {"disk", "per-disk throughput, IOPS, busy ratio, in-flight I/O (/proc/diskstats)", 100 * kMs,
     &MakeDiskCollector},
    {"psi", "CPU/memory/I/O pressure stalls, sampled and via kernel triggers (/proc/pressure)",
     100 * kMs, &MakePsiCollector},
    {"infiniband", "InfiniBand/RoCE port traffic, errors and state (/sys/class/infiniband)",
     1000 * kMs, &MakeInfinibandCollector},
    {"process", "CPU, RSS and I/O of the registered training processes (/proc/<pid>)", 100 * kMs,
     &MakeProcessCollector},
    // ---- GPU collectors (src/collectors/nvml_*, owned by the NVML module) ----
    {"nvml", "NVIDIA GPU utilisation, memory, power, clocks, throttling, ECC/XID (NVML)", 100 * kMs,
     &MakeNvmlCollector},
};

}  // namespace

std::span<const CollectorInfo> AllCollectors() { return kCollectors; }

Result<const CollectorInfo*> FindCollector(std::string_view name) {
  std::string known;
  for (const CollectorInfo& info : kCollectors) {
    if (info.name == name) return &info;
    known += (known.empty() ? "" : ", ") + std::string(info.name);
  }
  return NotFoundError("no collector named '" + std::string(name) + "'; known: " + known);
}

Result<std::unique_ptr<Collector>> MakeCollector(std::string_view name) {
  TITAN_ASSIGN_OR_RETURN(const CollectorInfo* info, FindCollector(name));
  return info->make();
}

}  // namespace titan
