// Output of `titan trace analyze`: the terminal summary, --json (one object) and --csv DIR
// (one table per file; with --hta-compat also HTA's six CSVs, named as HTA's exports).
// Thread safety: pure functions of the result.
#pragma once

#include <cstdio>
#include <string>

#include "src/base/status.h"
#include "src/trace/analyze.h"

namespace titan::trace {

// What the text report prints. By default it stays readable at any number of ranks: with more
// than kTextRankRows ranks the tables over ranks (time split, collective waits, launch delay,
// verdicts, HTA's temporal breakdown) become percentiles across ranks (p50, p90, max and the
// rank at the max) and the kTextOutliers ranks with the largest values, named; at any number of
// ranks the per-step rows, step spreads, stragglers and idle gaps are the kTextTopRows largest,
// followed by a line counting the rest and naming where they are (--full, --csv, --json), unless
// at most one row would be left out. `full` prints every row of every table instead. Either way
// the text depends only on the result, so a split analysis prints the same text.
struct TextOptions {
  bool hta_compat = false;
  bool full = false;
};
inline constexpr size_t kTextRankRows = 8;
inline constexpr size_t kTextTopRows = 5;
inline constexpr size_t kTextOutliers = 3;
inline constexpr size_t kTextErrors = 10;

// Prints each of `errors` as "<prefix><error>", at most `max_shown` of them, then one line
// counting the rest (10,000 unreadable files printed 20,001 lines); the JSON report lists all.
void PrintErrors(const std::vector<std::string>& errors, const char* prefix, size_t max_shown,
                 FILE* out);

void PrintTextReport(const AnalysisResult& result, const TextOptions& options, FILE* out);
// The same text as a string.
std::string TextReport(const AnalysisResult& result, const TextOptions& options);
std::string JsonReport(const AnalysisResult& result, bool hta_compat);
Status WriteCsvReport(const AnalysisResult& result, bool hta_compat, const std::string& dir);

}  // namespace titan::trace
