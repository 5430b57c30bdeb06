// The Titan supercomputer's GPU history (github.com/olcf/TitanGPULife `gc_full.csv`; see
// ../shared/data/fleet/README.md): one row per stay of a GPU (serial number `SN`) at a location,
//   SN,location,insert,remove,duration,out,event
// and rows with no `insert` that record a further DBE/OTB event of the GPU at `remove`.
//
// Mapped to fleet history records (src/fleet/history.h):
//   - a stay row: `enter` at insert with the location's parts as attributes (col, row, cage,
//     slot, node; node_name = the location "c10-1c0s6n3", slot_name = its blade "c10-1c0s6",
//     cabinet = "c10-1"); a `fail` of class DBE or OTB at remove when `event` is set; a `leave`
//     at remove unless the GPU is still there at the end of the data (remove = the file's last
//     time, no event, not out), where it is censored.
//   - an event-only row: a `fail` at remove (repeated errors of one GPU are kept: each is a
//     failure of the fleet, which is how the issue counts 846 in 2016-Q4).
//   - `batch` (standing): "new" when the GPU was first seen on or after 2016-01-01, else "old"
//     (the README's definition; it uses only the first insert, known when the GPU entered).
// `gc_summary_loc.csv` (final outcomes per GPU) is deliberately not read: its columns are known
// only at the end, and a backtest must not see them.
//
// Times are read as UTC. Rows that do not parse are skipped and counted in ReadStats.
// Thread safety: pure function over its arguments.
#pragma once

#include <string_view>

#include "src/fleet/history.h"

namespace titan::fleet {

// True when `text` starts with gc_full.csv's header (the columns SN, location, insert, remove,
// event in any order).
bool LooksLikeTitanCsv(std::string_view text);

void ReadTitanCsv(std::string_view text, std::string_view source, HistoryBuilder* builder);

// Parses a Titan location "c10-1c0s6n3" into its parts (col 10, row 1, cage 0, slot 6, node 3).
bool ParseTitanLocation(std::string_view location, int parts[5]);

}  // namespace titan::fleet
