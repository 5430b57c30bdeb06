// Reads a series from a file of any format titan plan knows, recognised by its content (the one
// list of readers is in read_series.cc): CSV (series_csv.h: generic time,value; Azure LLM
// traces; titan load timelines), JSON lines (series_jsonl.h: time,value; titan gateway access
// logs), JSON documents (series_json.h: a Prometheus range query's answer; titan load results).
// A live Prometheus is read by prometheus_source.h instead.
//
// Errors: a file that cannot be read, is over kMaxSeriesFileBytes, or whose format is not
// recognised (naming the file and the formats tried); bad records inside a recognised file are
// skipped and counted in RawSeries::skips.
// Thread safety: pure functions (ReadSeriesFile reads the file system).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/plan/series.h"

namespace titan::plan {

inline constexpr size_t kMaxSeriesFileBytes = size_t{4} << 30;

// `value`: which column or key is the value (empty: the format's default).
Result<RawSeries> ReadSeriesText(std::string_view text, const std::string& source,
                                 const std::string& value);

// `path` "-" reads standard input.
Result<RawSeries> ReadSeriesFile(const std::string& path, const std::string& value);

}  // namespace titan::plan
