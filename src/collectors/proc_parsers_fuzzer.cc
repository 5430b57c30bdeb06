// Fuzzes every /proc and /sys parser of the collectors. The first input byte picks the parser
// (modulo their number); the rest is the file content. Seeds: corpus/proc_parsers_fuzzer/.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "src/collectors/cpu_collector.h"
#include "src/collectors/disk_collector.h"
#include "src/collectors/infiniband_collector.h"
#include "src/collectors/memory_collector.h"
#include "src/collectors/net_collector.h"
#include "src/collectors/process_collector.h"
#include "src/collectors/psi_collector.h"

namespace titan {
namespace {

void Fuzz(uint8_t which, std::string_view text) {
  switch (which % 13) {
    case 0: {
      ProcStat out;
      if (ParseProcStat(text, &out).ok()) {
        for (const CpuTimes& cpu : out.cpus)
          TITAN_CHECK(cpu.cpu >= 0 && cpu.cpu <= 65535) << "parser contract";
      }
      break;
    }
    case 1: {
      Meminfo out;
      if (ParseMeminfo(text, &out).ok())
        TITAN_CHECK(out.Has(Meminfo::kMemTotal)) << "parser contract";
      break;
    }
    case 2: {
      Vmstat out;
      ParseVmstat(text, &out).IgnoreError();
      break;
    }
    case 3: {
      std::vector<NetDevStats> out;
      if (ParseNetDev(text, &out).ok()) {
        for (const NetDevStats& dev : out) TITAN_CHECK(!dev.name.empty()) << "parser contract";
      }
      break;
    }
    case 4: {
      std::vector<DiskStats> out;
      if (ParseDiskstats(text, &out).ok()) {
        for (const DiskStats& disk : out) TITAN_CHECK(!disk.name.empty()) << "parser contract";
      }
      break;
    }
    case 5: {
      Pressure out;
      ParsePressure(text, &out).IgnoreError();
      break;
    }
    case 6: {
      uint64_t out = 0;
      ParseIbCounter(text, &out).IgnoreError();
      break;
    }
    case 7: {
      int64_t out = 0;
      if (ParseIbState(text, &out).ok()) TITAN_CHECK(out >= 0) << "parser contract";
      break;
    }
    case 8: {
      double out = 0;
      if (ParseIbRate(text, &out).ok()) TITAN_CHECK(out >= 0) << "parser contract";
      break;
    }
    case 9: {
      ProcessStat out;
      ParseProcessStat(text, &out).IgnoreError();
      break;
    }
    case 10: {
      uint64_t out = 0;
      ParseProcessStatusRss(text, &out).IgnoreError();
      break;
    }
    case 11: {
      ProcessIo out;
      ParseProcessIo(text, &out).IgnoreError();
      break;
    }
    case 12:
      LooksLikePartition(text);
      break;
  }
}

}  // namespace
}  // namespace titan

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  titan::Fuzz(data[0], std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  return 0;
}
