// What the `titan plan` subcommands share: error exits, output files, the series options
// (a file or a live Prometheus, the value, the grid) and their flags.
// Thread safety: single-threaded command-line code.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "src/base/status.h"
#include "src/plan/series.h"

namespace titan::plan {

inline constexpr int64_t kSecondNs = 1'000'000'000;
inline constexpr int64_t kHourNs = 3600 * kSecondNs;
inline constexpr int64_t kDayNs = 24 * kHourNs;

// Prints "titan plan: message" and returns 2 for bad input (INVALID_ARGUMENT, NOT_FOUND), 1
// otherwise.
int Fail(const Status& status);

// Where a series comes from and how it is put on a grid.
struct SeriesFlags {
  std::string source;         // a file, "-", or http://host:port of a Prometheus
  std::string value;          // column / key / sum (readers' defaults when empty)
  std::string query;          // PromQL (Prometheus)
  std::string start, end;     // times (Prometheus; default: the last 14 days)
  int64_t step_ns = kHourNs;  // the forecast's step
  int64_t resolution_ns = 0;  // events / Prometheus: the finer grid first aggregated over
  std::string aggregate = "mean";
};
// Adds the flags (--value, --step, --resolution, --aggregate, --query, --start, --end) to `app`.
void AddSeriesFlags(CLI::App& app, SeriesFlags* flags);

// Reads and grids the series; says on stderr what was skipped.
Result<RegularSeries> LoadSeries(const SeriesFlags& flags);

// "0.05,0.5,0.95" -> ascending levels in (0, 1).
Result<std::vector<double>> ParseLevels(const std::string& text);

}  // namespace titan::plan
