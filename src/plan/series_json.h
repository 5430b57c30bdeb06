// Series from JSON documents:
//   - a Prometheus range query's answer (GET /api/v1/query_range: {"status":"success","data":
//     {"resultType":"matrix","result":[{"metric":{...},"values":[[t,"v"],...]}]}}): a gauge;
//     several series are added up at each time (the plan is for their total), and the name
//     says how many; "NaN" and infinite samples are skipped and counted. An answer with
//     "status":"error" is an error quoting Prometheus' errorType and error;
//   - titan load's result (--json, "kind":"titan.load.run"): its per-second timeline as events
//     at the run's wall-clock start plus each second; `value` picks the column (planned,
//     completed, output_tokens; default planned).
// AddPrometheusMatrix is what the chunked reader (prometheus_source.h) uses for each chunk.
// Errors: not JSON (with the byte offset), JSON nested too deep, or a document of neither kind
// (naming the keys found).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/plan/series.h"

namespace titan::plan {

// True when `text` (its start) looks like a JSON object rather than JSON lines.
bool LooksLikeJsonDocument(std::string_view text);

Result<RawSeries> ReadSeriesJson(std::string_view text, const std::string& source,
                                 const std::string& value);

// Adds the samples of one query_range answer to *series (a gauge): the samples of its series at
// one time are added up into one point. Answers for disjoint time ranges (chunks) may be added
// one after another. Sets series->name from the labels when it is empty. `source` goes into
// errors.
Status AddPrometheusMatrix(std::string_view text, const std::string& source, RawSeries* series);

}  // namespace titan::plan
