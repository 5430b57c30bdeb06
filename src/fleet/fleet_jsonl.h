// The fleet history format: JSON Lines, one record per line (UTF-8; blank lines and lines that
// start with '#' are ignored). Every record has a `time` and an `event`; every event but `end`
// names a `component`:
//
//   {"time": "2016-10-01T08:14:20Z", "component": "0323712021406", "event": "enter",
//    "attributes": {"node_name": "c15-0c2s6n1", "slot_name": "c15-0c2s6", "cage": "2",
//                   "batch": "old"}}
//   {"time": 1475309660.5, "component": "0323712021406", "event": "fail", "class": "DBE",
//    "text": "double-bit ECC error"}
//   {"time": "2016-10-02", "component": "0323712021406", "event": "repair", "text": "reseated"}
//   {"time": "2016-10-03", "component": "0323712021406", "event": "leave", "text": "RMA"}
//   {"time": "2016-10-03", "component": "gpu-017/0", "event": "observe",
//    "values": {"ecc_dbe_total": 2, "xid_total": 5, "temperature_c": 71.5}}
//   {"time": "2019-08-01T20:07:33Z", "event": "end"}
//
// `time`: a UTC calendar time (src/fleet/time_text.h) or seconds since the Unix epoch.
// `event`: enter, fail, repair, leave, observe, end (src/fleet/history.h says what each means).
// `class` (fail; default "failure"), `text` (fail, repair, leave; optional), `attributes` (enter:
// string or number values; numbers are kept as written), `values` (observe: numbers).
// Other keys are ignored, so that writers may add their own.
//
// Reading never fails on a bad record: it is skipped and counted in ReadStats with its line
// (a record without a time, an unknown event, a value of the wrong type, a line over 1 MiB).
//
// Thread safety: pure functions over their arguments.
#pragma once

#include <string>
#include <string_view>

#include "src/fleet/history.h"

namespace titan::fleet {

// Adds the records of `text` (a whole JSONL document) to *builder. `source` names it in
// ReadStats ("fleet.jsonl").
void ReadFleetJsonl(std::string_view text, std::string_view source, HistoryBuilder* builder);

// The history as JSONL, in time order, ending with an `end` record. ReadFleetJsonl reads it back
// to an equivalent history: standing component attributes are written into each enter.
std::string WriteFleetJsonl(const FleetHistory& history);

}  // namespace titan::fleet
