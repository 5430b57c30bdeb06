// simdjson On-Demand parsing of event batches. This file alone is compiled with AVX2/BMI/PCLMUL
// flags (see CMakeLists.txt) so that On-Demand uses its haswell kernel; event_batch.cc calls it
// only on CPUs that have those instructions. It avoids instantiating shared templates: everything
// that touches the model goes through out-of-line functions of other files.
#include <simdjson.h>

#include <string>

#include "src/trace/importers/event_args.h"
#include "src/trace/importers/event_batch.h"
#include "src/trace/importers/event_fields.h"

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

Status Malformed(int64_t doc_offset, const char* what, simdjson::error_code error) {
  return InvalidArgumentError(std::string("malformed JSON in trace events after byte ") +
                              std::to_string(doc_offset) + " (" + what + ": " +
                              simdjson::error_message(error) + ")");
}

// The On-Demand side of event_fields.h. Values are not validated until read, so a failed read
// checks whether the value is JSON as the DOM parser reads it: both parsers then agree on what
// is skipped (a value of the wrong type) and what fails the batch (NaN, 1e400, 2^64, @).
struct OnDemandJson {
  using Value = value;
  static bool Micros(Value v, int64_t* ns, bool* is_float) {
    return ParseMicrosToken(TrimToken(v.raw_json_token()), ns, is_float);
  }
  [[gnu::noinline, gnu::cold]] static bool IsValid(Value v) {
    simdjson::ondemand::json_type type;
    if (v.type().get(type)) return false;
    switch (type) {
      case simdjson::ondemand::json_type::number: {
        simdjson::ondemand::number_type number_type;
        if (v.get_number_type().get(number_type)) return false;
        double d;
        int64_t i;
        uint64_t u;
        switch (number_type) {
          case simdjson::ondemand::number_type::floating_point_number:
            return !v.get_double().get(d);  // not 1e400
          case simdjson::ondemand::number_type::signed_integer:
            return !v.get_int64().get(i);
          default:
            return !v.get_uint64().get(u);  // not beyond 2^64
        }
      }
      case simdjson::ondemand::json_type::string: {
        std::string_view s;
        return !v.get_string().get(s);
      }
      case simdjson::ondemand::json_type::boolean: {
        bool b;
        return !v.get_bool().get(b);
      }
      case simdjson::ondemand::json_type::null: {
        bool is_null = false;
        return !v.is_null().get(is_null) && is_null;
      }
      default:
        return true;  // an object or array (its structure was checked by JsonStream's scan)
    }
  }
  static void Args(Value v, RankTrace* out, Op* op) {
    object args;
    if (v.get_object().get(args)) return;
    ArgsState state;
    for (auto field : args) {
      simdjson::ondemand::raw_json_string raw_key;
      if (field.key().get(raw_key)) break;
      value arg = field.value();
      ApplyArg(KeyOf(raw_key), arg, out, op, &state);
    }
    FinishArgs(state, out, op);
  }
};

}  // namespace

Status ParseEventBatchOnDemand(const char* json, size_t len, size_t capacity,
                               const EventParseOptions& options, int64_t doc_offset, RankTrace* out,
                               FirstMalformedEvent* first_malformed) {
  thread_local simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (auto error = parser.iterate(json, len, capacity).get(doc)) {
    return Malformed(doc_offset, "batch", error);
  }
  simdjson::ondemand::array events;
  if (auto error = doc.get_array().get(events)) return Malformed(doc_offset, "batch", error);
  size_t index = 0;
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
      if (!ApplyEventField<OnDemandJson>(key, v, out, &op, &f)) {
        return InvalidArgumentError("malformed JSON in trace events after byte " +
                                    std::to_string(doc_offset) + " (the value of \"" +
                                    std::string(key) + "\" is not JSON)");
      }
    }
    if (!FinishEvent(f, options, op, out)) {
      NoteMalformedEvent(json, len, doc_offset, index, f.malformed, first_malformed);
    }
    ++index;
  }
  // Nothing may follow the array. A batch cut inside a string or a nested value (a seam cut,
  // json_stream.h) leaves a value open or a stray bracket that On-Demand need not look at, and a
  // failed read inside an event's args stops the iterator: all three leave it short of the end.
  if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) {
    return Malformed(doc_offset, "batch", simdjson::TAPE_ERROR);
  }
  return OkStatus();
}

}  // namespace titan::trace::internal
