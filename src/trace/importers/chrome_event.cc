#include "src/trace/importers/chrome_event.h"

#include "src/trace/importers/event_args.h"
#include "src/trace/importers/event_batch.h"

#include <cmath>
#include <functional>

#include <fmt/format.h>

namespace titan::trace {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

// int32 from a JSON int or string (pid/tid can be either).
int32_t IdOf(element v) {
  int64_t i;
  if (!v.get_int64().get(i)) return static_cast<int32_t>(i);
  std::string_view s;
  if (!v.get_string().get(s)) {
    return static_cast<int32_t>(std::hash<std::string_view>()(s) & 0x7fffffff);
  }
  return 0;
}

// A number of microseconds in nanoseconds; `is_float` when written with a fraction/exponent.
bool NumberToNanos(element v, int64_t* ns, bool* is_float) {
  switch (v.type()) {
    case simdjson::dom::element_type::INT64: {
      int64_t i = v.get_int64().value_unsafe();
      *is_float = false;
      return !__builtin_mul_overflow(i, int64_t{1000}, ns);
    }
    case simdjson::dom::element_type::DOUBLE:
      *is_float = true;
      return MicrosToNanos(v.get_double().value_unsafe(), ns);
    default:
      return false;  // not a number, or beyond int64 microseconds
  }
}

void ParseArgs(object args, RankTrace* out, Op* op) {
  internal::ArgsState state;
  for (auto [key, v] : args) internal::ApplyArg(key, v, out, op, &state);
  internal::FinishArgs(state, out, op);
}

}  // namespace

bool MicrosToNanos(double micros, int64_t* out_ns) {
  if (!std::isfinite(micros) || std::fabs(micros) > 9.2e15) return false;
  if (std::fabs(micros) < 8e12) {
    auto k = static_cast<int64_t>(std::nearbyint(micros * 1000.0));
    // Exact when k (ns) is the decimal that the double was rounded from.
    for (int64_t candidate : {k, k - 1, k + 1}) {
      if (static_cast<double>(candidate) / 1000.0 == micros) {
        *out_ns = candidate;
        return true;
      }
    }
  }
  *out_ns = static_cast<int64_t>(std::llround(static_cast<long double>(micros) * 1000.0L));
  return true;
}

Status ParseChromeEvent(object event, const EventParseOptions& options, const OffsetMap& offsets,
                        RankTrace* out) {
  out->stats.events++;
  Op op;
  op.kind = options.default_kind;
  internal::EventFields f;
  for (auto [key, v] : event) {
    if (key == "args") {
      object args;
      if (!v.get_object().get(args)) ParseArgs(args, out, &op);
      continue;
    }
    if (key.size() > 4) continue;
    if (key == "ph") {
      std::string_view s;
      if (v.get_string().get(s)) {
        return InvalidArgumentError(
            fmt::format("malformed trace event at byte {}: \"ph\" is not a string", offsets.begin));
      }
      f.ph = s.empty() ? '?' : s[0];
    } else if (key == "cat") {
      std::string_view s;
      if (v.get_string().get(s)) continue;  // a non-string cat is treated as unknown
      op.kind = internal::KindFromCategory(s);
      f.has_cat = true;
      f.cat_is_trace = s == "Trace";
    } else if (key == "name") {
      if (v.get_string().get(f.name)) {
        f.name = {};
        continue;
      }
      op.name = out->strings.Intern(f.name);
      f.name = out->strings.Get(op.name);
      f.has_name = true;
    } else if (key == "ts" || key == "dur") {
      int64_t ns;
      bool is_float = false;
      if (!NumberToNanos(v, &ns, &is_float)) {
        return InvalidArgumentError(
            fmt::format("malformed trace event at byte {}: \"{}\" is not a number of microseconds",
                        offsets.begin, key));
      }
      if (key == "ts") {
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
  }
  internal::FinishEvent(f, options, op, out);
  return OkStatus();
}

namespace internal {

StringId InternString(RankTrace* out, std::string_view s) { return out->strings.Intern(s); }
std::string_view NameOf(const RankTrace* out, StringId id) { return out->strings.Get(id); }
int32_t AddCollective(RankTrace* out, const CollectiveArgs& args) {
  out->collectives.push_back(args);
  return static_cast<int32_t>(out->collectives.size() - 1);
}

EventKind KindFromCategory(std::string_view cat) {
  switch (cat.size()) {
    case 6:
      if (cat == "cpu_op") return EventKind::kCpuOp;
      if (cat == "kernel" || cat == "Kernel") return EventKind::kKernel;
      break;
    case 9:
      if (cat == "cuda_sync") return EventKind::kCudaSync;
      break;
    case 10:
      if (cat == "gpu_memcpy") return EventKind::kGpuMemcpy;
      if (cat == "gpu_memset") return EventKind::kGpuMemset;
      break;
    case 11:
      if (cat == "cuda_driver") return EventKind::kCudaDriver;
      break;
    case 12:
      if (cat == "cuda_runtime") return EventKind::kCudaRuntime;
      break;
    case 15:
      if (cat == "user_annotation") return EventKind::kUserAnnotation;
      if (cat == "python_function") return EventKind::kPythonFunction;
      break;
    case 19:
      if (cat == "gpu_user_annotation") return EventKind::kGpuUserAnnotation;
      break;
    default:
      break;
  }
  if (cat == "Memcpy") return EventKind::kGpuMemcpy;
  if (cat == "Memset") return EventKind::kGpuMemset;
  if (cat == "Runtime") return EventKind::kCudaRuntime;
  if (cat == "mtia_ccp_events") return EventKind::kMtiaCcpEvent;
  if (cat == "Operator") return EventKind::kCpuOp;
  return EventKind::kOther;
}

void FinishEvent(const EventFields& f, const EventParseOptions& options, Op op, RankTrace* out) {
  // The dtypes pandas gives HTA's ts and dur columns (over every event, whatever its phase).
  if (!f.has_ts || op.ts_is_float) out->hta_float_ts = true;
  if (!f.has_ts) out->hta_ts_missing = true;
  if (!f.has_dur) out->hta_dur_missing = true;
  if (f.has_dur && f.dur_is_float) out->hta_dur_float = true;
  switch (f.ph) {
    case 'X':
      break;
    case 's':
    case 'f':
    case 't':
      out->stats.flow_events++;
      return;
    case 'M':
      out->stats.metadata_events++;
      return;
    default:
      out->stats.other_phase_events++;
      return;
  }
  if (!f.has_ts || !f.has_dur) {
    out->stats.missing_fields++;
    return;
  }
  if (!f.has_name) out->stats.missing_fields++;
  if (!f.has_cat && options.default_kind != EventKind::kOther &&
      f.name.starts_with("ProfilerStep")) {
    op.kind = EventKind::kUserAnnotation;
  }
  op.hta_dropped = !f.has_cat || f.cat_is_trace;
  if (op.kind == EventKind::kOther) out->stats.unknown_category++;
  if (op.dur_ns < 0) out->stats.negative_durations++;
  out->stats.complete_events++;
  if (out->ops.empty() && out->stats.events == 1) out->first_op_is_first_event = true;
  out->ops.push_back(op);
}

bool ParseMicrosToken(std::string_view t, int64_t* out_ns, bool* is_float) {
  *is_float = false;
  size_t i = 0;
  bool negative = false;
  if (i < t.size() && t[i] == '-') {
    negative = true;
    ++i;
  }
  if (i >= t.size() || t[i] < '0' || t[i] > '9') return false;
  uint64_t whole = 0;
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i) {
    if (whole > (UINT64_MAX - 9) / 10) return false;
    whole = whole * 10 + static_cast<unsigned>(t[i] - '0');
  }
  int64_t frac_ns = 0;
  int frac_digits = 0;
  bool round_up = false;
  if (i < t.size() && t[i] == '.') {
    *is_float = true;
    ++i;
    if (i >= t.size() || t[i] < '0' || t[i] > '9') return false;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++frac_digits) {
      if (frac_digits < 3) {
        frac_ns = frac_ns * 10 + (t[i] - '0');
      } else if (frac_digits == 3) {
        round_up = t[i] >= '5';
      }
    }
  }
  for (int d = frac_digits; d < 3; ++d) frac_ns *= 10;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    *is_float = true;
    char* end = nullptr;
    std::string copy(t);
    double d = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size()) return false;
    return MicrosToNanos(d, out_ns);
  }
  if (i != t.size()) return false;
  int64_t ns;
  if (__builtin_mul_overflow(static_cast<int64_t>(whole), int64_t{1000}, &ns) ||
      whole > static_cast<uint64_t>(INT64_MAX)) {
    return false;
  }
  ns += frac_ns + (round_up ? 1 : 0);
  *out_ns = negative ? -ns : ns;
  return true;
}

}  // namespace internal

}  // namespace titan::trace
