// The rules for one trace event's fields, shared by the DOM and the On-Demand batch parsers:
// which keys titan reads (ph, cat, name, ts, dur, tid, args), what each must be, and what a field
// of the wrong kind does to its event. A "ph" that is not a string, or a "ts" or "dur" that is
// not a number of microseconds in int64 nanoseconds (a string, null, an object, 1e16, ...) marks
// the event malformed: FinishEvent skips it and counts it by reason (ImportStats::malformed_*).
// A non-string "cat" or "name" is unknown or missing, as before. A value that is not JSON at all
// (NaN, 1e400, @) is a fatal error in both parsers, as the DOM parser rejects the whole batch.
//
// Each parser supplies a policy `Json` with its value type and the reads that differ:
//   using Value;                                   // simdjson's dom::element or ondemand::value
//   static bool Micros(Value, int64_t* ns, bool* is_float);  // a number of us to exact ns
//   static bool IsValid(Value);      // after a failed read: is the value JSON (else fatal)?
//   static void Args(Value, RankTrace*, Op*);      // the args object (event_args.h)
// The template is instantiated with each parser's own (file-local) policy, so the AVX2-compiled
// instance never replaces the other (as with event_args.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "src/trace/importers/event_batch.h"
#include "src/trace/model.h"

namespace titan::trace::internal {

// int32 from a JSON int or string (pid/tid can be either; strings hash with FNV-1a).
template <typename Value>
inline int32_t IdOf(Value v) {
  int64_t i;
  if (!v.get_int64().get(i)) return static_cast<int32_t>(i);
  std::string_view s;
  if (!v.get_string().get(s)) {
    uint32_t h = 2166136261u;
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
    return static_cast<int32_t>(h & 0x7fffffff);
  }
  return 0;
}

// Applies one member of an event to `op` and `f`. False only when the value is not JSON (the
// caller fails the batch; JsonStream then names the event's offset).
template <typename Json>
inline bool ApplyEventField(std::string_view key, typename Json::Value v, RankTrace* out, Op* op,
                            EventFields* f) {
  if (key.size() > 4) return true;  // none of the keys below
  std::string_view s;
  switch (key[0]) {
    case 'p':
      if (key == "ph") {
        if (v.get_string().get(s)) {
          if (!Json::IsValid(v)) return false;
          f->malformed |= kMalformedPh;
        } else {
          f->ph = s.empty() ? '?' : s[0];
        }
      }
      break;
    case 'c':
      if (key == "cat") {
        if (v.get_string().get(s)) return Json::IsValid(v);  // not a string: an unknown cat
        op->kind = KindFromCategory(s);
        f->has_cat = true;
        f->cat_is_trace = s == "Trace";
      }
      break;
    case 'n':
      if (key == "name") {
        if (v.get_string().get(s)) return Json::IsValid(v);  // not a string: counted as missing
        op->name = InternString(out, s);
        f->has_name = true;
      }
      break;
    case 't':
    case 'd':
      if (key == "ts" || key == "dur") {
        int64_t ns;
        bool is_float;
        if (!Json::Micros(v, &ns, &is_float)) {
          if (!Json::IsValid(v)) return false;
          f->malformed |= key[0] == 't' ? kMalformedTs : kMalformedDur;
        } else if (key[0] == 't') {
          op->ts_ns = ns;
          op->ts_is_float = is_float;
          f->has_ts = true;
        } else {
          op->dur_ns = ns;
          f->has_dur = true;
          f->dur_is_float = is_float;
        }
      } else if (key == "tid") {
        op->tid = IdOf(v);
      }
      break;
    case 'a':
      if (key == "args") Json::Args(v, out, op);
      break;
    default:
      break;
  }
  return true;
}

}  // namespace titan::trace::internal
