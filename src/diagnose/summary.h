// `titan diagnose --summarize`: what one node's logs say, compact enough to send to one place
// when there are thousands of nodes. A summary holds each file's report, the candidate roots
// (every finding that states a cause or an error) and each file's first symptoms of each kind
// (the first kSummarySymptomsPerRule: a flood of identical timeouts adds nothing), the facts that
// map processes and GPUs to ranks, and the Flight Recorder dumps reduced to their collectives.
// `titan diagnose` of the summaries builds the incidents from the same findings, so it gives the
// verdict it gives for the raw logs (test: summary_test.cc over the shared incidents).
//
//   {"titan_diagnose_summary": 1, "host": "...", "files": [...], "findings": [...],
//    "rank_gpus": [...], "pid_ranks": [...], "flight_records": [...], "first": T, "last": T}
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/diagnose/sources/source.h"

namespace titan::diagnose {

inline constexpr int kSummarySymptomsPerRule = 32;
inline constexpr int kSummaryVersion = 1;

// The summary of files read on this node (in input order). Its first key is
// "titan_diagnose_summary", which is how a reader recognises it.
nlohmann::ordered_json SummaryJson(const std::vector<SourceOutput>& outputs,
                                   const std::string& host);

// A summary read back: one SourceOutput per summarised file. INVALID_ARGUMENT naming `what` for a
// document that is not a summary of this version.
Result<std::vector<SourceOutput>> ReadSummary(const nlohmann::json& doc, std::string_view what);

}  // namespace titan::diagnose
