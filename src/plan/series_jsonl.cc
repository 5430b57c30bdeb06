#include "src/plan/series_jsonl.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "src/base/text.h"
#include "src/fleet/time_text.h"

namespace titan::plan {

namespace {

constexpr size_t kMaxLineBytes = 1 << 20;

// What one line holds of interest.
struct Line {
  bool has_time = false;
  double time_seconds = 0;
  bool access_log = false;  // has "endpoint" and "e2e_ms": a titan gateway access-log line
  std::vector<bool> found;  // per value key
  double value = 0;         // sum of the value keys found
};

// Reads a time in seconds from a number scaled by `scale` or a calendar string.
std::string ReadTime(simdjson::ondemand::value v, double scale, double* out) {
  simdjson::ondemand::json_type type;
  if (v.type().get(type)) return "unreadable time";
  if (type == simdjson::ondemand::json_type::number) {
    double d = 0;
    if (v.get_double().get(d) || !std::isfinite(d) || std::fabs(d * scale) > 1e12) {
      return "the time is not a finite epoch time";
    }
    *out = d * scale;
    return "";
  }
  std::string_view s;
  if (type != simdjson::ondemand::json_type::string || v.get_string().get(s) ||
      !fleet::ParseTimeSeconds(s, out)) {
    return "the time is neither epoch seconds nor a UTC calendar time";
  }
  return "";
}

std::string ParseLine(simdjson::ondemand::parser& parser, simdjson::padded_string_view text,
                      const std::vector<std::string>& keys, Line* line) {
  simdjson::ondemand::document doc;
  if (parser.iterate(text).get(doc)) return "not JSON";
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj)) return "not a JSON object";
  bool endpoint = false, e2e = false;
  line->found.assign(keys.size(), false);
  for (auto field : obj) {
    std::string_view key;
    simdjson::ondemand::value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) return "not JSON";
    double scale = 0;
    if (key == "time" || key == "timestamp" || key == "ts" || key == "t") scale = 1;
    if (key == "time_ms") scale = 1e-3;
    if (key == "time_ns") scale = 1e-9;
    if (scale > 0 && !line->has_time) {
      std::string why = ReadTime(v, scale, &line->time_seconds);
      if (!why.empty()) return why;
      line->has_time = true;
      continue;
    }
    endpoint = endpoint || key == "endpoint";
    e2e = e2e || key == "e2e_ms";
    for (size_t i = 0; i < keys.size(); ++i) {
      if (key != keys[i] || line->found[i]) continue;
      double d = 0;
      if (v.get_double().get(d) || !std::isfinite(d)) {
        return fmt::format("'{}' is not a finite number", Excerpt(key, 40));
      }
      line->found[i] = true;
      line->value += d;
      break;
    }
  }
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
    return "trailing content after the object";
  }
  line->access_log = endpoint && e2e;
  return "";
}

}  // namespace

Result<RawSeries> ReadSeriesJsonl(std::string_view text, const std::string& source,
                                  const std::string& value) {
  std::vector<std::string> keys = SplitSum(value.empty() ? "value" : value);
  if (keys.empty()) {
    return InvalidArgumentError(fmt::format("{}: --value '{}' is not a key or a sum of keys (a+b)",
                                            source, Excerpt(value)));
  }
  RawSeries out;
  out.source = "JSON lines";
  out.name = value.empty() ? "value" : value;
  simdjson::ondemand::parser parser;
  std::string buffer;
  int64_t line_number = 0, lines = 0;
  bool decided = false;  // the first readable line decides access log or gauge
  while (!text.empty()) {
    std::string_view raw = Trim(NextLine(&text));
    ++line_number;
    if (raw.empty() || raw[0] == '#') continue;
    ++lines;
    auto skip = [&](std::string_view why) {
      out.skips.Skip(fmt::format("{}:{}: {}", source, line_number, why));
    };
    if (raw.size() > kMaxLineBytes) {
      skip("line over 1 MiB");
      continue;
    }
    buffer.assign(raw);
    buffer.resize(raw.size() + simdjson::SIMDJSON_PADDING);
    Line line;
    std::string why =
        ParseLine(parser, simdjson::padded_string_view(buffer.data(), raw.size(), buffer.size()),
                  keys, &line);
    if (why.empty() && !line.has_time) why = "no time (time, timestamp, ts, t, time_ms, time_ns)";
    if (!why.empty()) {
      skip(why);
      continue;
    }
    if (!decided) {
      decided = true;
      if (line.access_log) {
        out.source = "titan gateway access log";
        out.kind = PointKind::kEvents;
        out.name = value.empty() ? "requests" : value;
        out.unit = value.empty() ? "requests/s" : value + "/s";
        if (value.empty()) keys.clear();
      }
    }
    if (out.kind == PointKind::kEvents && keys.empty()) {
      out.points.emplace_back(line.time_seconds, 1);
      continue;
    }
    bool all = true;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!line.found[i]) {
        skip(fmt::format("no number '{}' (name the value with --value KEY)", Excerpt(keys[i], 40)));
        all = false;
        break;
      }
    }
    if (all) out.points.emplace_back(line.time_seconds, line.value);
  }
  if (lines == 0) return InvalidArgumentError(fmt::format("{}: no JSON lines", source));
  return out;
}

}  // namespace titan::plan
