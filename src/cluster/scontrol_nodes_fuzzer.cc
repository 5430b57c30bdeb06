// Fuzzes the parser of `scontrol -o show node` output (read from a command titan runs, but the
// text is the cluster's: node names, reasons written by anyone who can drain a node).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "src/cluster/slurm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const titan::cluster::SlurmNodeState& s : titan::cluster::ParseScontrolNodes(text)) {
    if (s.name.empty() || s.state.empty()) std::abort();
    (void)s.Lost();
    (void)s.Draining();
  }
  return 0;
}
