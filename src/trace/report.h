// Output of `titan trace analyze`: the terminal summary, --json (one object) and --csv DIR
// (one table per file; with --hta-compat also HTA's six CSVs, named as HTA's exports).
// Thread safety: pure functions of the result.
#pragma once

#include <cstdio>
#include <string>

#include "src/base/status.h"
#include "src/trace/analyze.h"

namespace titan::trace {

void PrintTextReport(const AnalysisResult& result, bool hta_compat, FILE* out);
std::string JsonReport(const AnalysisResult& result, bool hta_compat);
Status WriteCsvReport(const AnalysisResult& result, bool hta_compat, const std::string& dir);

}  // namespace titan::trace
