#include "src/fleet/fleet_jsonl.h"

#include <cmath>

#include <fmt/format.h>
#include <simdjson.h>

#include "src/base/text.h"
#include "src/fleet/time_text.h"

namespace titan::fleet {

namespace {

constexpr size_t kMaxLineBytes = 1 << 20;
constexpr double kYear1900Seconds = -2208988800.0;
constexpr double kYear10000Seconds = 253402300800.0;

// One record's fields, before they are checked against its event kind.
struct Record {
  bool has_time = false;
  double time_seconds = 0;
  std::string event, component, failure_class, text;
  bool has_attributes = false, has_values = false;
  Attributes attributes;
  std::vector<std::pair<std::string, double>> values;
};

// Reads a time that is a number or a string. Returns an error reason, or "" when read.
std::string ReadTime(simdjson::ondemand::value v, double* out) {
  simdjson::ondemand::json_type type;
  if (v.type().get(type)) return "unreadable time";
  if (type == simdjson::ondemand::json_type::number) {
    double d = 0;
    if (v.get_double().get(d) || !std::isfinite(d)) return "time is not a finite number";
    *out = d;
    return "";
  }
  std::string_view s;
  if (type != simdjson::ondemand::json_type::string || v.get_string().get(s)) {
    return "time is neither a number nor a string";
  }
  if (!ParseTimeSeconds(s, out)) return "time is not a calendar time or epoch seconds";
  return "";
}

// Returns "" or the reason the line is not a record.
std::string ParseRecord(simdjson::ondemand::parser& parser, simdjson::padded_string_view line,
                        Record* r) {
  simdjson::ondemand::document doc;
  if (parser.iterate(line).get(doc)) return "not JSON";
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj)) return "not a JSON object";
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return "not JSON";
    simdjson::ondemand::value v;
    if (field.value().get(v)) return "not JSON";
    std::string_view s;
    if (key == "time") {
      std::string why = ReadTime(v, &r->time_seconds);
      if (!why.empty()) return why;
      r->has_time = true;
    } else if (key == "event" || key == "component" || key == "class" || key == "text") {
      if (v.get_string().get(s)) return fmt::format("'{}' is not a string", key);
      std::string& dest = key == "event"       ? r->event
                          : key == "component" ? r->component
                          : key == "class"     ? r->failure_class
                                               : r->text;
      dest.assign(s);
    } else if (key == "attributes" || key == "values") {
      simdjson::ondemand::object inner;
      if (v.get_object().get(inner)) return fmt::format("'{}' is not an object", key);
      const bool attrs = key == "attributes";
      (attrs ? r->has_attributes : r->has_values) = true;
      for (auto kv : inner) {
        std::string_view name;
        simdjson::ondemand::value x;
        if (kv.unescaped_key().get(name) || kv.value().get(x)) return "not JSON";
        simdjson::ondemand::json_type type;
        if (x.type().get(type)) return "not JSON";
        if (attrs) {
          if (type == simdjson::ondemand::json_type::string) {
            if (x.get_string().get(s)) return "not JSON";
            r->attributes.emplace_back(std::string(name), std::string(s));
          } else if (type == simdjson::ondemand::json_type::number) {
            std::string_view raw = Trim(x.raw_json_token());
            r->attributes.emplace_back(std::string(name), std::string(raw));
          } else {
            return fmt::format("attribute '{}' is not a string or a number", Excerpt(name, 40));
          }
        } else {
          double d = 0;
          if (type != simdjson::ondemand::json_type::number || x.get_double().get(d) ||
              !std::isfinite(d)) {
            return fmt::format("value '{}' is not a finite number", Excerpt(name, 40));
          }
          r->values.emplace_back(std::string(name), d);
        }
      }
    }
    // Unknown keys are ignored (On-Demand skips their values).
  }
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
    return "trailing content after the object";
  }
  return "";
}

}  // namespace

void ReadFleetJsonl(std::string_view text, std::string_view source, HistoryBuilder* builder) {
  simdjson::ondemand::parser parser;
  std::string buffer;
  int64_t line_no = 0;
  ReadStats& stats = builder->stats();
  while (!text.empty()) {
    std::string_view line = Trim(NextLine(&text));
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    auto where = [&] { return fmt::format("{}:{}", source, line_no); };
    if (line.size() > kMaxLineBytes) {
      stats.Skip("line over 1 MiB", where());
      continue;
    }
    buffer.assign(line);
    buffer.resize(line.size() + simdjson::SIMDJSON_PADDING);
    Record r;
    std::string why = ParseRecord(
        parser, simdjson::padded_string_view(buffer.data(), line.size(), buffer.size()), &r);
    if (why.empty() && !r.has_time) why = "no 'time'";
    if (why.empty() && r.event.empty()) why = "no 'event'";
    if (!why.empty()) {
      stats.Skip(why, where());
      continue;
    }
    if (r.event == "end") {
      builder->End(r.time_seconds);
      continue;
    }
    EventKind kind;
    if (!ParseEventKind(r.event, &kind)) {
      stats.Skip("unknown event (expected enter, fail, repair, leave, observe or end)", where());
      continue;
    }
    if (r.component.empty()) {
      stats.Skip("no 'component'", where());
      continue;
    }
    switch (kind) {
      case EventKind::kEnter:
        builder->Enter(r.component, r.time_seconds, std::move(r.attributes));
        break;
      case EventKind::kFail:
        builder->Fail(r.component, r.time_seconds,
                      r.failure_class.empty() ? "failure" : r.failure_class, std::move(r.text));
        break;
      case EventKind::kRepair:
        builder->Repair(r.component, r.time_seconds, std::move(r.text));
        break;
      case EventKind::kLeave:
        builder->Leave(r.component, r.time_seconds, std::move(r.text));
        break;
      case EventKind::kObserve:
        if (r.values.empty()) {
          stats.Skip("observe without 'values'", where());
          continue;
        }
        builder->Observe(r.component, r.time_seconds, r.values);
        break;
    }
  }
}

std::string WriteFleetJsonl(const FleetHistory& history) {
  std::string out;
  auto time_field = [&](double t) {
    out += "{\"time\":";
    // Whole seconds in years 1900-9999 as calendar times, anything else as the shortest number
    // that reads back exactly.
    if (t == std::floor(t) && t >= kYear1900Seconds && t < kYear10000Seconds) {
      AppendJsonString(FormatTime(t), &out);
    } else {
      out += fmt::format("{}", t);
    }
  };
  for (const Event& e : history.events()) {
    const auto& c = history.components()[e.component];
    time_field(e.time_seconds);
    out += ",\"component\":";
    AppendJsonString(c.id, &out);
    out += ",\"event\":\"";
    out += EventKindName(e.kind);
    out += '"';
    if (e.kind == EventKind::kFail) {
      out += ",\"class\":";
      AppendJsonString(history.failure_classes()[e.failure_class], &out);
    }
    if (!e.text.empty()) {
      out += ",\"text\":";
      AppendJsonString(e.text, &out);
    }
    if (e.kind == EventKind::kEnter) {
      out += ",\"attributes\":{";
      bool first = true;
      for (const auto& [k, v] : MergeAttributes(c.attributes, e.attributes)) {
        if (!first) out += ',';
        first = false;
        AppendJsonString(k, &out);
        out += ':';
        AppendJsonString(v, &out);
      }
      out += '}';
    }
    if (e.kind == EventKind::kObserve) {
      out += ",\"values\":{";
      for (size_t i = 0; i < e.values.size(); ++i) {
        if (i) out += ',';
        AppendJsonString(history.covariates()[e.values[i].first], &out);
        out += fmt::format(":{}", e.values[i].second);
      }
      out += '}';
    }
    out += "}\n";
  }
  time_field(history.end_seconds());
  out += ",\"event\":\"end\"}\n";
  return out;
}

}  // namespace titan::fleet
