// Reads a series from a live Prometheus with range queries (GET /api/v1/query_range), in
// chunks: Prometheus answers at most 11,000 points per series per query, so a range of more
// steps is read as consecutive, non-overlapping chunks of at most `max_points` steps each, and
// their samples are joined into one gauge (several series in an answer are added up).
//
// The query is PromQL; `step_seconds` is the query's resolution. Progress goes to `progress`
// (one line per chunk) when it is set.
// Errors: a URL that is not http://host:port[/prefix] (INVALID_ARGUMENT); Prometheus not
// answering (UNAVAILABLE, naming the URL), or answering with an error (its errorType and
// message, and the chunk's range).
//
// Thread safety: blocking; reentrant.
#pragma once

#include <cstdio>
#include <string>

#include "src/base/status.h"
#include "src/plan/series.h"

namespace titan::plan {

inline constexpr int64_t kPrometheusMaxPoints = 11'000;

struct PrometheusRange {
  std::string url;    // http://host:9090 (a path prefix is kept: http://host/prometheus)
  std::string query;  // PromQL
  double start_seconds = 0, end_seconds = 0;
  double step_seconds = 60;
  int64_t max_points = kPrometheusMaxPoints;  // per query, >= 2
  int64_t timeout_ns = 60'000'000'000;        // per query
};

// The [start, end] of each query: ceil(points / max_points) chunks that tile the range on the
// step grid (each chunk's first time is the previous chunk's last plus one step).
std::vector<std::pair<double, double>> PrometheusChunks(const PrometheusRange& range);

// Percent-encodes `text` for a URL query (RFC 3986 unreserved characters stay).
std::string UrlEncode(std::string_view text);

Result<RawSeries> ReadPrometheus(const PrometheusRange& range, FILE* progress);

}  // namespace titan::plan
