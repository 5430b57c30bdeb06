#include "src/fleet/recorder_source.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "src/base/csv.h"
#include "src/base/text.h"

namespace titan::fleet {

namespace {

// The value of label `name` in a series key `metric{a="x",b="y"}` ("" when absent).
std::string Label(std::string_view key, std::string_view name) {
  std::string pattern = std::string(name) + "=\"";
  size_t open = key.find('{');
  if (open == std::string_view::npos) return "";
  for (size_t p = key.find(pattern, open); p != std::string_view::npos;
       p = key.find(pattern, p + 1)) {
    char before = key[p - 1];
    if (before != '{' && before != ',') continue;
    size_t start = p + pattern.size();
    size_t end = key.find('"', start);
    if (end == std::string_view::npos) return "";
    return std::string(key.substr(start, end - start));
  }
  return "";
}

// Series name (before '{') -> covariate name, or "" when the series is not a covariate.
// *max: the covariate aggregates by maximum over GPUs, else by sum.
std::string Covariate(std::string_view key, bool* max) {
  std::string_view metric = key.substr(0, key.find('{'));
  *max = false;
  if (metric == "titan_gpu_ecc_errors_total") return "ecc_" + Label(key, "kind") + "_total";
  if (metric == "titan_gpu_xid_errors_total") return "xid_total";
  if (metric == "titan_gpu_throttle_seconds_total") {
    return "throttle_" + Label(key, "reason") + "_seconds_total";
  }
  if (metric == "titan_gpu_temperature_celsius") {
    *max = true;
    return "temperature_max_celsius";
  }
  return "";
}

}  // namespace

bool LooksLikeRecorderCsv(std::string_view text) {
  if (text.empty()) return false;
  return Trim(NextLine(&text)) == "time_ns,series,value";
}

void ReadRecorderCsv(std::string_view text, std::string_view source, std::string_view node,
                     HistoryBuilder* builder) {
  ReadStats& stats = builder->stats();
  if (!LooksLikeRecorderCsv(text)) {
    stats.Skip("no recorder dump header time_ns,series,value", fmt::format("{}:1", source));
    return;
  }
  NextLine(&text);
  // bucket -> covariate -> (series key -> last value): the last value of each series in a
  // bucket, then aggregated over series (GPUs, XIDs) per covariate.
  struct Cell {
    bool max = false;
    std::map<std::string, double> last_by_series;
  };
  std::map<int64_t, std::map<std::string, Cell>> buckets;
  std::vector<std::string> f;
  int64_t line_no = 1;
  constexpr size_t kMaxSeries = 4096;  // per bucket and covariate: bounds memory on hostile input
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    ++line_no;
    if (Trim(line).empty()) continue;
    auto where = [&] { return fmt::format("{}:{}", source, line_no); };
    int64_t time_ns = 0;
    double value = 0;
    if (!SplitCsvRecord(line, &f) || f.size() != 3 || !ParseInt64(f[0], &time_ns) ||
        !ParseDouble(f[2], &value) || !std::isfinite(value)) {
      stats.Skip("malformed row (expected time_ns,series,value)", where());
      continue;
    }
    bool max = false;
    std::string cov = Covariate(f[1], &max);
    if (cov.empty()) continue;
    int64_t bucket =
        static_cast<int64_t>(std::floor(static_cast<double>(time_ns) / 1e9 / kBucketSeconds));
    Cell& cell = buckets[bucket][cov];
    cell.max = max;
    if (cell.last_by_series.size() >= kMaxSeries && !cell.last_by_series.count(f[1])) {
      stats.Skip("too many series for one covariate", where());
      continue;
    }
    cell.last_by_series[f[1]] = value;
  }
  for (const auto& [bucket, covs] : buckets) {
    std::vector<std::pair<std::string, double>> values;
    for (const auto& [cov, cell] : covs) {
      double v = cell.max ? -1e300 : 0;
      for (const auto& [series, x] : cell.last_by_series) v = cell.max ? std::max(v, x) : v + x;
      values.emplace_back(cov, v);
    }
    builder->Observe(node, (static_cast<double>(bucket) + 1) * kBucketSeconds, values);
  }
}

}  // namespace titan::fleet
