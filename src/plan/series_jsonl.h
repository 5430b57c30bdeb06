// Series from JSON lines, one object per line:
//   - titan gateway's access log (--access-log: "time_ns", "endpoint", "e2e_ms", ... per
//     request): events, one per request, weighted 1 (requests/s) or by the sum of the numeric
//     keys `value` names ("tokens_budgeted");
//   - any other JSON lines: a gauge. The time is "time", "timestamp", "ts" or "t" (epoch
//     seconds or a UTC calendar time), or "time_ms" / "time_ns" (epoch milliseconds or
//     nanoseconds); the value is the key `value` names (a sum with '+'), by default "value".
// Lines that are not such objects are skipped and counted with file:line and why; blank lines
// and lines starting with '#' are ignored. Lines over 1 MiB are skipped.
// Errors: an empty file (INVALID_ARGUMENT).
//
// Thread safety: pure function.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/plan/series.h"

namespace titan::plan {

Result<RawSeries> ReadSeriesJsonl(std::string_view text, const std::string& source,
                                  const std::string& value);

}  // namespace titan::plan
