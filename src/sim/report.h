// Report: a simulation summary (or a sweep of them) as a terminal table, JSON or CSV.
// JSON and CSV carry the same fields; every number is finite. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/sim/simulate.h"

namespace titan::sim {

std::string FormatTable(const SimSummary& summary);
// One line per sweep point; `key` names the swept parameter.
std::string FormatSweepTable(const std::string& key, const std::vector<SweepRow>& rows);

nlohmann::json SummaryJson(const SimSummary& summary);
// {"sweep": key, "rows": [{"value": ..., <summary>}, ...]}
nlohmann::json SweepJson(const std::string& key, const std::vector<SweepRow>& rows);

// A header line and one line per row. `key` may be empty (a single run: one row, value "").
std::string FormatCsv(const std::string& key, const std::vector<SweepRow>& rows);

}  // namespace titan::sim
