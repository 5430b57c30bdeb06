// The agent's flight-recorder CSV dumps (`/recorder?format=csv`, src/agent/recorder_dump.h:
// `time_ns,series,value`) as time-varying covariates of one node (an `observe` record of the
// node's component every `kBucketSeconds`, the last value in each bucket). Read series:
//   titan_gpu_ecc_errors_total{kind=K}        -> ecc_<K>_total   summed over the node's GPUs
//   titan_gpu_xid_errors_total                -> xid_total       summed over XIDs and GPUs
//   titan_gpu_throttle_seconds_total{reason=R} -> throttle_<R>_seconds_total, summed over GPUs
//   titan_gpu_temperature_celsius             -> temperature_max_celsius, the hottest GPU
// Other series are ignored (not counted as skipped). The dump does not name its node, so the
// caller does (`NODE=dump.csv` on titan predict's command line, else the file's stem).
// Rows that do not parse are skipped and counted.
// Thread safety: pure function over its arguments.
#pragma once

#include <string_view>

#include "src/fleet/history.h"

namespace titan::fleet {

inline constexpr double kBucketSeconds = 60;

// True when the first line is the dump's header "time_ns,series,value".
bool LooksLikeRecorderCsv(std::string_view text);
void ReadRecorderCsv(std::string_view text, std::string_view source, std::string_view node,
                     HistoryBuilder* builder);

}  // namespace titan::fleet
