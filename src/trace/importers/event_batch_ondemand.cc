// simdjson On-Demand parsing of event batches. This file alone is compiled with AVX2/BMI/PCLMUL
// flags (see CMakeLists.txt) so that On-Demand uses its haswell kernel; event_batch.cc calls it
// only on CPUs that have those instructions. It avoids instantiating shared templates: everything
// that touches the model goes through out-of-line functions of other files.
#include <simdjson.h>

#include <string>

#include "src/trace/importers/event_args.h"
#include "src/trace/importers/event_batch.h"

namespace titan::trace::internal {
namespace {

using simdjson::ondemand::object;
using simdjson::ondemand::value;

// The key as written (trace keys carry no escapes; an escaped key matches no known name).
inline std::string_view KeyOf(const simdjson::ondemand::raw_json_string& key) {
  const char* p = key.raw();
  const char* q = p;
  while (*q != '"') ++q;
  return std::string_view(p, static_cast<size_t>(q - p));
}

inline std::string_view TrimToken(std::string_view t) {
  while (!t.empty() &&
         (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t' ||
          t.back() == ',' || t.back() == '}' || t.back() == ']')) {
    t.remove_suffix(1);
  }
  return t;
}

inline int32_t IdOf(value v) {
  int64_t i;
  if (!v.get_int64().get(i)) return static_cast<int32_t>(i);
  std::string_view s;
  if (!v.get_string().get(s)) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
    return static_cast<int32_t>(h & 0x7fffffff);
  }
  return 0;
}

Status Malformed(int64_t doc_offset, const char* what, simdjson::error_code error) {
  return InvalidArgumentError(std::string("malformed JSON in trace events after byte ") +
                              std::to_string(doc_offset) + " (" + what + ": " +
                              simdjson::error_message(error) + ")");
}

void ParseArgs(object args, RankTrace* out, Op* op) {
  ArgsState state;
  for (auto field : args) {
    simdjson::ondemand::raw_json_string raw_key;
    if (field.key().get(raw_key)) break;
    value v = field.value();
    ApplyArg(KeyOf(raw_key), v, out, op, &state);
  }
  FinishArgs(state, out, op);
}

}  // namespace

Status ParseEventBatchOnDemand(const char* json, size_t len, size_t capacity,
                               const EventParseOptions& options, int64_t doc_offset,
                               RankTrace* out) {
  thread_local simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (auto error = parser.iterate(json, len, capacity).get(doc)) {
    return Malformed(doc_offset, "batch", error);
  }
  simdjson::ondemand::array events;
  if (auto error = doc.get_array().get(events)) return Malformed(doc_offset, "batch", error);
  for (auto element : events) {
    object event;
    if (auto error = element.get_object().get(event)) {
      return Malformed(doc_offset, "event is not an object", error);
    }
    out->stats.events++;
    Op op;
    op.kind = options.default_kind;
    EventFields f;
    for (auto field : event) {
      simdjson::ondemand::raw_json_string raw_key;
      if (auto error = field.key().get(raw_key)) return Malformed(doc_offset, "key", error);
      std::string_view key = KeyOf(raw_key);
      value v = field.value();
      if (key.size() > 4) continue;
      switch (key[0]) {
        case 'p':
          if (key == "ph") {
            std::string_view s;
            if (auto error = v.get_string().get(s)) return Malformed(doc_offset, "ph", error);
            f.ph = s.empty() ? '?' : s[0];
          }
          break;
        case 'c':
          if (key == "cat") {
            std::string_view s;
            if (v.get_string().get(s)) break;
            op.kind = KindFromCategory(s);
            f.has_cat = true;
            f.cat_is_trace = s == "Trace";
          }
          break;
        case 'n':
          if (key == "name") {
            if (v.get_string().get(f.name)) {
              f.name = {};
              break;
            }
            op.name = InternString(out, f.name);
            f.has_name = true;
          }
          break;
        case 't':
        case 'd':
          if (key == "ts" || key == "dur") {
            std::string_view token = v.raw_json_token();
            int64_t ns;
            bool is_float;
            if (!ParseMicrosToken(TrimToken(token), &ns, &is_float)) {
              return InvalidArgumentError(std::string("malformed trace event after byte ") +
                                          std::to_string(doc_offset) + ": \"" + std::string(key) +
                                          "\" is not a number of microseconds");
            }
            if (key[0] == 't') {
              op.ts_ns = ns;
              op.ts_is_float = is_float;
              f.has_ts = true;
            } else {
              op.dur_ns = ns;
              f.has_dur = true;
              f.dur_is_float = is_float;
            }
          } else if (key == "tid") {
            op.tid = IdOf(v);
          }
          break;
        case 'a':
          if (key == "args") {
            object args;
            if (!v.get_object().get(args)) ParseArgs(args, out, &op);
          }
          break;
        default:
          break;
      }
    }
    if (f.has_name) f.name = NameOf(out, op.name);
    FinishEvent(f, options, op, out);
  }
  return OkStatus();
}

}  // namespace titan::trace::internal
