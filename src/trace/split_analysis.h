// The split analysis, for jobs whose traces stay on the nodes that wrote them: each node runs
// SummarizeTraces over its own ranks (`titan trace summarize`) and writes a NodeSummary
// (summary_file.h); one process then reads every node's summary with AnalyzeSummaries (`titan
// trace analyze SUMMARY...`). The AnalysisResult is the one AnalyzeTraces gives for all the trace
// files at once, listed node by node in the order of the summaries, field for field, except
// `seconds` (this process's time). So every output (text, --json, --csv, --report) is the same.
//
// A merge refuses, naming the files: a rank in two summaries, summaries of different jobs (their
// `job` ids differ, or their ranks disagree on the world size), summaries written with different
// per-rank options (--top, --hta-compat, --hta-kernel-delay-us), another format version, and
// asking for per-rank options the summaries were not written with.
// Thread safety: both functions start and join their own threads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/trace/analyze.h"
#include "src/trace/summary_file.h"

namespace titan::trace {

// Analyses the ranks in `files` (as AnalyzeRanks does, per-rank options from `options`) into one
// node summary labelled with `job` and `host`. Files that fail are listed in `errors`.
NodeSummary SummarizeTraces(const std::vector<std::string>& files, const AnalyzeOptions& options,
                            std::string job, std::string host);

struct MergeOptions {
  int threads = 2;          // summaries read at once
  int top_collectives = 5;  // as AnalyzeOptions::top_collectives
  bool hta_compat = false;  // fill AnalysisResult::hta (the summaries must have it)
  // Per-rank options the caller named explicitly; each must equal the summaries' own.
  std::optional<int> top_gaps;
  std::optional<double> hta_kernel_delay_us;
};

// Reads the summaries in `files` and analyses across all their ranks. Errors (INVALID_ARGUMENT,
// FAILED_PRECONDITION, ALREADY_EXISTS) name the files concerned and say what to do; no partial
// result is returned.
Result<AnalysisResult> AnalyzeSummaries(const std::vector<std::string>& files,
                                        const MergeOptions& options);

}  // namespace titan::trace
