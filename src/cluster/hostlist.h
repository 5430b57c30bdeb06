// Slurm hostlists: "n[1-3,7],gpu-[001-004]-ib,login1" expands to n1 n2 n3 n7 gpu-001-ib ...
// login1, as SLURM_JOB_NODELIST and `scontrol show hostnames` write them.
//
// Syntax: names separated by commas outside brackets; each name may hold several bracket
// groups (rack[1-2]-n[1-4] is their product, left group slowest); a group is a comma list of
// numbers and ranges LO-HI; a range keeps the zero padding of LO ("[08-11]" gives 08 09 10 11).
// Names keep their order; duplicates are kept as written.
//
// Errors (INVALID_ARGUMENT) name the byte offset and what is wrong: an unclosed or nested
// bracket, an empty group or name, a range with HI < LO or a non-digit bound, a number over 18
// digits, or more than `max_hosts` names in all (the expansion is never built past the bound).
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan::cluster {

inline constexpr size_t kDefaultMaxHosts = 1'000'000;

Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist,
                                                size_t max_hosts = kDefaultMaxHosts);

}  // namespace titan::cluster
