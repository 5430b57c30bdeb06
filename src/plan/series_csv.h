// Series from CSV files, by their header:
//   - Azure's LLM inference traces (TIMESTAMP,ContextTokens,GeneratedTokens; `titan load
//     --trace` replays them): events, one per request, weighted 1 (requests/s) or by the sum of
//     the columns `value` names ("ContextTokens+GeneratedTokens": tokens/s);
//   - titan load's --timeline CSV (second,planned,completed,...): per-second counts as events
//     at offsets from the run's start (no wall clock); `value` picks the column (planned);
//   - any other CSV: a gauge. The time column is the one named time, timestamp, date,
//     datetime, ds or t (any case), else the first; times are UTC calendar times or epoch
//     seconds (src/fleet/time_text.h). The value is `value`: a column or a sum of columns
//     ("running_gpu_num+pending_gpu_num"); without it, the one other column of a two-column
//     file. A file without a header (its first line all numbers) is time,value.
// Rows that do not parse are skipped and counted (RawSeries::skips) with file:line and why.
// Errors (INVALID_ARGUMENT): an empty file, a `value` naming a column the header lacks (the
// message lists the columns), no value column to choose.
//
// Thread safety: pure function.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/plan/series.h"

namespace titan::plan {

Result<RawSeries> ReadSeriesCsv(std::string_view text, const std::string& source,
                                const std::string& value);

}  // namespace titan::plan
