// The `titan trace analyze` pipeline: expand paths to trace files, import and analyse ranks in
// parallel on a bounded number of threads (each rank's events are dropped as soon as its small
// summary exists, so memory is about threads x one rank's compact events), then match ranks.
// A file that fails to import is reported by name and the other ranks are still analysed.
// Thread safety: AnalyzeTraces starts and joins its own threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/trace/analyses/cross_rank.h"
#include "src/trace/analyses/hta_compat.h"
#include "src/trace/analyses/rank_summary.h"
#include "src/trace/importers/importer.h"

namespace titan::trace {

struct AnalyzeOptions {
  bool hta_compat = false;
  int threads = 2;
  int top_collectives = 5;
  SummaryOptions summary;
  HtaOptions hta;
  RankRule rank_rule;  // how each file's rank is found (ImportTraceFile)
};

struct AnalysisResult {
  std::vector<RankSummary> ranks;  // by rank
  std::vector<HtaRankResult> hta;  // by rank, with --hta-compat
  CrossRankResult cross;
  std::vector<std::string> errors;  // one line per file that could not be used
  // What the results leave out without being wrong: ranks of the world size the traces state
  // that no file holds (HTA's own test data gives 2 ranks of a 128-rank job). Not an error.
  std::vector<std::string> warnings;
  uint64_t input_bytes = 0;  // uncompressed JSON analysed
  double seconds = 0;
};

// Files named by `paths`: files as given; directories contribute their *.json and *.json.gz
// files (sorted). Errors for missing paths and directories without traces.
Result<std::vector<std::string>> ExpandTracePaths(const std::vector<std::string>& paths);

AnalysisResult AnalyzeTraces(const std::vector<std::string>& files, const AnalyzeOptions& options);

// "ranks 2, 5-7 of world size 8 (4) are in none of the 3 files analysed: ..." when `ranks`
// (sorted by rank) do not hold every rank of the world size they state; nullopt when they do or
// none states one. Ranges keep the line short whatever the world size.
std::optional<std::string> MissingRanks(const std::vector<RankSummary>& ranks, size_t files);

// The per-rank half of AnalyzeTraces: `ranks`, `hta`, `errors` and `input_bytes` exactly as
// AnalyzeTraces fills them; `cross` is left empty. AnalyzeTraces is AnalyzeRanks followed by
// AnalyseAcrossRanks(ranks, options.top_collectives); `titan trace summarize` stops after it.
AnalysisResult AnalyzeRanks(const std::vector<std::string>& files, const AnalyzeOptions& options);

}  // namespace titan::trace
