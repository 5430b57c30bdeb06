// The report's sections, one builder per kind of titan result (src/report/input.h). Each reads
// its input through Fields (src/report/fields.h) and throws InputError when the input is not the
// shape its kind promises; BuildReport turns that into a Status naming the file.
//
// Readability at scale: series that grow with the input (per-second timelines, recorder samples,
// per-step times) are min/max decimated by the page; per-rank data beyond kMaxRankLines ranks is
// shown as percentiles across ranks with the outliers named, never as one line per rank.
//
// Thread safety: pure functions.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/report/input.h"
#include "src/report/page.h"

namespace titan::report {

inline constexpr size_t kMaxRankLines = 16;
// A missing number (a gap in a series, an empty cell).
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void AddLoadRun(const Input& input, Report* report);
void AddLoadSweep(const Input& input, Report* report);
void AddTraceAnalysis(const Input& input, Report* report);
void AddSim(const Input& input, Report* report);
void AddAgentDump(const Input& input, Report* report);
void AddGatewayLog(const Input& input, Report* report);
// titan predict: survival curves by group, hazard ratios, MTBF per period; the risk ranking;
// the backtest table and calibration plot (whichever the file is).
void AddPredict(const Input& input, Report* report);
void AddDiagnosis(const Input& input, Report* report);  // titan diagnose --json
// titan plan: the demand forecast over its history, a backtest's scores and calibration, a
// training plan with its simulated candidates, a serving plan's replicas per step, a fleet's
// failure projection and its backtest.
void AddPlan(const Input& input, Report* report);
// One section per job: the event logs and ledgers of its nodes (from titan run's --event-log and
// --ledger-json; a ledger's "event_log" names its log, and files in one directory go together).
void AddRuns(const std::vector<const Input*>& files, Report* report);

// The whole report: sections in the order the inputs came, run files grouped by job. `skipped`
// lists files a directory held that are not titan results (shown in a note). Errors name the
// file and what was wrong with it.
Result<Report> BuildReport(const std::vector<Input>& inputs,
                           const std::vector<std::string>& skipped, std::string title);

// Helpers shared by the builders.
// "1.23 s", "456 ms", "78 us" from a duration in seconds.
std::string FormatSeconds(double seconds);
// The indices of `values` sorted by value, descending; at most `n`.
std::vector<size_t> TopIndices(const std::vector<double>& values, size_t n);
// A JSON number as a double; anything else (null, absent, a string) is NaN.
double NumOrNaN(const nlohmann::json& value);
// Percentile q in [0, 1] of `values` (nearest rank; NaN ignored; NaN when none).
double Percentile(std::vector<double> values, double q);

}  // namespace titan::report
