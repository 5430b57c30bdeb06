#include "src/plan/series_json.h"

#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/base/text.h"

namespace titan::plan {

namespace {

using nlohmann::json;

Result<json> Parse(std::string_view text, const std::string& source) {
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(text, source));
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    // Parse again for the position (exceptions stay inside this function).
    try {
      json ignored = json::parse(text);
    } catch (const json::parse_error& e) {
      return InvalidArgumentError(
          fmt::format("{}: not JSON (byte {}): {}", source, e.byte, Excerpt(e.what(), 200)));
    } catch (const json::exception& e) {  // a number beyond a double's range: out_of_range
      return InvalidArgumentError(fmt::format("{}: not JSON: {}", source, Excerpt(e.what(), 200)));
    }
    return InvalidArgumentError(fmt::format("{}: not JSON", source));
  }
  return doc;
}

std::string Keys(const json& doc) {
  std::string out;
  if (!doc.is_object()) return doc.type_name();
  for (const auto& [k, v] : doc.items()) {
    if (out.size() > 200) return out + ", ...";
    out += (out.empty() ? "" : ", ") + Excerpt(k, 40);
  }
  return out.empty() ? "none" : out;
}

// "{job="x",instance="y"}" for a series' labels.
std::string Labels(const json& metric) {
  std::string name, labels;
  if (!metric.is_object()) return "";
  for (const auto& [k, v] : metric.items()) {
    if (!v.is_string()) continue;
    if (k == "__name__") {
      name = v.get<std::string>();
    } else {
      labels += fmt::format("{}{}=\"{}\"", labels.empty() ? "" : ",", k, v.get<std::string>());
    }
  }
  return Excerpt(labels.empty() ? name : name + "{" + labels + "}", 200);
}

Status AddMatrix(const json& doc, const std::string& source, RawSeries* series) {
  if (!doc.contains("data")) {
    return InvalidArgumentError(fmt::format("{}: no data in the answer", source));
  }
  const json& data = doc["data"];
  if (!data.is_object() || !data.contains("resultType") || !data["resultType"].is_string()) {
    return InvalidArgumentError(fmt::format("{}: no data.resultType in the answer", source));
  }
  if (data["resultType"] != "matrix") {
    return InvalidArgumentError(
        fmt::format("{}: resultType is \"{}\"; a series needs a range query (/api/v1/query_range, "
                    "resultType matrix)",
                    source, Excerpt(data["resultType"].get<std::string>())));
  }
  if (!data.contains("result") || !data["result"].is_array()) {
    return InvalidArgumentError(fmt::format("{}: data.result is not an array", source));
  }
  std::map<double, double> sums;
  size_t index = 0;
  for (const json& s : data["result"]) {
    const std::string where = fmt::format("{}: data.result[{}]", source, index++);
    if (!s.is_object() || !s.contains("values") || !s["values"].is_array()) {
      series->skips.Skip(where + ": no values array");
      continue;
    }
    if (series->name.empty() && s.contains("metric")) series->name = Labels(s["metric"]);
    size_t k = 0;
    for (const json& sample : s["values"]) {
      const std::string at = fmt::format("{}.values[{}]", where, k++);
      double v = 0;
      if (!sample.is_array() || sample.size() != 2 || !sample[0].is_number() ||
          !sample[1].is_string() || !ParseDouble(sample[1].get<std::string>(), &v)) {
        series->skips.Skip(at + ": not [time, \"value\"]");
        continue;
      }
      const double t = sample[0].get<double>();
      if (!std::isfinite(v) || !std::isfinite(t)) {
        series->skips.Skip(at + ": not a finite sample");
        continue;
      }
      sums[t] += v;
    }
  }
  if (index > 1) series->name = fmt::format("sum of {} series", index);
  for (const auto& [t, v] : sums) series->points.emplace_back(t, v);
  return OkStatus();
}

// A whole query_range answer: success with a matrix, or Prometheus' error.
Status AddAnswer(const json& doc, const std::string& source, RawSeries* series) {
  if (!doc.is_object() || !doc.contains("status")) {
    return InvalidArgumentError(fmt::format(
        "{}: not a Prometheus answer (no \"status\"; the keys are {})", source, Keys(doc)));
  }
  if (doc["status"] != "success") {
    return InvalidArgumentError(
        fmt::format("{}: Prometheus answered {}: {}", source,
                    doc.contains("errorType") ? Excerpt(doc["errorType"].dump(), 80) : "an error",
                    doc.contains("error") ? Excerpt(doc["error"].dump(), 300) : "(no message)"));
  }
  return AddMatrix(doc, source, series);
}

Result<RawSeries> LoadTimeline(const json& doc, const std::string& source,
                               const std::string& value) {
  RawSeries out;
  out.source = "titan load result";
  out.kind = PointKind::kEvents;
  out.name = value.empty() ? "planned" : value;
  out.unit = out.name.find("tokens") != std::string::npos ? "tokens/s" : "requests/s";
  if (!doc.contains("timeline") || !doc["timeline"].is_array()) {
    return InvalidArgumentError(
        fmt::format("{}: a titan load result without a timeline (write it with titan load "
                    "--json; a sweep's probes have none)",
                    source));
  }
  double start = 0;
  if (doc.contains("start_wall_ns") && doc["start_wall_ns"].is_number()) {
    start = doc["start_wall_ns"].get<double>() * 1e-9;
  } else {
    out.wall_clock = false;
  }
  size_t index = 0;
  for (const json& row : doc["timeline"]) {
    const std::string where = fmt::format("{}: timeline[{}]", source, index++);
    if (!row.is_object() || !row.contains("second") || !row["second"].is_number()) {
      out.skips.Skip(where + ": no second");
      continue;
    }
    if (!row.contains(out.name) || !row[out.name].is_number()) {
      return InvalidArgumentError(fmt::format("{}: no number '{}' (the columns are {})", where,
                                              Excerpt(out.name), Keys(row)));
    }
    out.points.emplace_back(start + row["second"].get<double>(), row[out.name].get<double>());
  }
  return out;
}

}  // namespace

bool LooksLikeJsonDocument(std::string_view text) {
  text = Trim(text);
  if (text.empty() || text[0] != '{') return false;
  // One object per line is JSON lines; a document spans lines or is the only line.
  const size_t newline = text.find('\n');
  if (newline == std::string_view::npos) {
    return text.find("\"resultType\"") != text.npos || text.find("\"errorType\"") != text.npos ||
           text.find("\"titan.load.run\"") != text.npos;
  }
  const std::string_view first = Trim(text.substr(0, newline));
  return first.size() < 2 || first.back() != '}';
}

Status AddPrometheusMatrix(std::string_view text, const std::string& source, RawSeries* series) {
  TITAN_ASSIGN_OR_RETURN(json doc, Parse(text, source));
  return AddAnswer(doc, source, series);
}

Result<RawSeries> ReadSeriesJson(std::string_view text, const std::string& source,
                                 const std::string& value) {
  TITAN_ASSIGN_OR_RETURN(json doc, Parse(text, source));
  if (doc.is_object() && doc.contains("kind") && doc["kind"] == "titan.load.run") {
    return LoadTimeline(doc, source, value);
  }
  // Prometheus answers with data, or with errorType and error when the query failed.
  if (doc.is_object() && doc.contains("status") &&
      (doc.contains("data") || doc.contains("errorType"))) {
    RawSeries out;
    out.source = "Prometheus range query";
    TITAN_RETURN_IF_ERROR(AddAnswer(doc, source, &out));
    if (out.name.empty()) out.name = "value";
    return out;
  }
  return InvalidArgumentError(fmt::format(
      "{}: a JSON document that is neither a Prometheus range query's answer nor a titan load "
      "result (the keys are {}); for a series give CSV or JSON lines of time and value",
      source, Keys(doc)));
}

}  // namespace titan::plan
