#include "src/plan/prometheus_source.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "src/fleet/time_text.h"
#include "src/http/client.h"
#include "src/plan/series_json.h"

namespace titan::plan {

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::vector<std::pair<double, double>> PrometheusChunks(const PrometheusRange& range) {
  std::vector<std::pair<double, double>> chunks;
  const int64_t per_chunk = std::max<int64_t>(2, range.max_points);
  const double step = range.step_seconds;
  const int64_t points =
      static_cast<int64_t>(std::floor((range.end_seconds - range.start_seconds) / step)) + 1;
  for (int64_t first = 0; first < points; first += per_chunk) {
    const int64_t last = std::min(points, first + per_chunk) - 1;
    chunks.emplace_back(range.start_seconds + static_cast<double>(first) * step,
                        range.start_seconds + static_cast<double>(last) * step);
  }
  return chunks;
}

Result<RawSeries> ReadPrometheus(const PrometheusRange& range, FILE* progress) {
  if (!(range.step_seconds > 0) || !(range.end_seconds >= range.start_seconds)) {
    return InvalidArgumentError(
        "a Prometheus range needs a positive step and an end not before its start");
  }
  TITAN_ASSIGN_OR_RETURN(http::Url url, http::ParseUrl(range.url));
  RawSeries series;
  series.source = "Prometheus " + range.url;
  const auto chunks = PrometheusChunks(range);
  size_t index = 0;
  for (const auto& [start, end] : chunks) {
    ++index;
    http::OutgoingRequest request;
    request.method = "GET";
    request.target = fmt::format("{}/api/v1/query_range?query={}&start={:.3f}&end={:.3f}&step={}",
                                 url.path, UrlEncode(range.query), start, end,
                                 UrlEncode(fmt::format("{}s", range.step_seconds)));
    const std::string where =
        fmt::format("{} chunk {}/{} ({} .. {})", range.url, index, chunks.size(),
                    fleet::FormatTime(start), fleet::FormatTime(end));
    Result<http::FetchedResponse> response =
        http::Fetch(url, request, range.timeout_ns, size_t{512} << 20);
    if (!response.ok()) return response.status().WithContext(where);
    // Prometheus answers errors (bad query, too many points) as JSON with status "error".
    Status added = AddPrometheusMatrix(response->body, where, &series);
    if (!added.ok()) {
      if (response->status != 200 && response->body.find("\"status\"") == std::string::npos) {
        return UnavailableError(fmt::format("{}: HTTP {}", where, response->status));
      }
      return added;
    }
    if (progress != nullptr) {
      std::fprintf(progress, "prometheus: %s: %zu points so far\n", where.c_str(),
                   series.points.size());
    }
  }
  series.name = range.query;  // what the user asked for, whatever the series' labels
  return series;
}

}  // namespace titan::plan
