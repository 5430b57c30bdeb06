// What titan load writes: the summary table, the complete JSON result (what titan report
// reads), per-request records (JSONL or CSV), the per-second timeline (CSV), and a Perfetto
// trace (requests as slices with TTFT marks, per-second counters, scraped server gauges) on
// the wall clock, so it opens next to titan agent's dumps and profiler traces.
//
// Every file is written atomically (src/base/atomic_file.h).
// Thread safety: pure functions.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/load/runner.h"
#include "src/load/stats.h"

namespace titan::load {

// The human summary: requests, rates, latency table (corrected and from send), errors,
// validity and SLO gates.
std::string FormatSummary(const Summary& summary, const RunRecords& run);

// The JSON result of one run. `config` is echoed under "config".
nlohmann::json RunJson(const Summary& summary, const RunRecords& run, const nlohmann::json& config);
nlohmann::json DistributionJson(const Distribution& d);

// By the file's extension: ".csv" CSV, anything else JSON lines.
Status WriteRecords(const std::string& path, const RunRecords& run);
Status WriteTimelineCsv(const std::string& path, const Summary& summary);
// At most `max_slices` request slices (the first ones); counters are always complete.
Status WritePerfetto(const std::string& path, const Summary& summary, const RunRecords& run,
                     size_t max_slices = 200'000);

}  // namespace titan::load
