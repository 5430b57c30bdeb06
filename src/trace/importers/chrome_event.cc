#include "src/trace/importers/chrome_event.h"

#include <cmath>
#include <string>

#include "src/trace/importers/event_batch.h"

namespace titan::trace {

bool MicrosToNanos(double micros, int64_t* out_ns) {
  if (!std::isfinite(micros) || std::fabs(micros) > 9.2e15) return false;
  if (std::fabs(micros) < 8e12) {  // within kMaxTraceTimeNs
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
  return IsTraceTime(*out_ns);
}

namespace internal {

StringId InternString(RankTrace* out, std::string_view s) { return out->strings.Intern(s); }
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

std::string_view MalformedFieldText(uint8_t field) {
  switch (field) {
    case kMalformedPh:
      return "a \"ph\" that is not a string";
    case kMalformedTs:
      return "a \"ts\" that is not a number of microseconds within +-2^62 ns";
    default:
      return "a \"dur\" that is not a number of microseconds or ends past +-2^62 ns";
  }
}

bool FinishEvent(const EventFields& f, const EventParseOptions& options, Op op, RankTrace* out) {
  if (f.malformed != 0) {
    if (f.malformed & kMalformedPh) {
      out->stats.malformed_ph++;
    } else if (f.malformed & kMalformedTs) {
      out->stats.malformed_ts++;
    } else {
      out->stats.malformed_dur++;
    }
    if (op.collective >= 0) out->collectives.pop_back();  // its args came before the bad field
    return false;
  }
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
      return true;
    case 'M':
      out->stats.metadata_events++;
      return true;
    default:
      out->stats.other_phase_events++;
      return true;
  }
  if (!f.has_ts || !f.has_dur) {
    out->stats.missing_fields++;
    return true;
  }
  if (!IsTraceTime(op.end_ns())) {  // both parts are within the bound: the sum cannot overflow
    out->stats.malformed_dur++;
    if (op.collective >= 0) out->collectives.pop_back();
    return false;
  }
  if (!f.has_name) out->stats.missing_fields++;
  if (!f.has_cat && options.default_kind != EventKind::kOther &&
      out->strings.Get(op.name).starts_with("ProfilerStep")) {
    op.kind = EventKind::kUserAnnotation;
  }
  op.hta_dropped = !f.has_cat || f.cat_is_trace;
  if (op.kind == EventKind::kOther) out->stats.unknown_category++;
  if (op.dur_ns < 0) out->stats.negative_durations++;
  out->stats.complete_events++;
  if (out->ops.empty() && out->stats.events == 1) out->first_op_is_first_event = true;
  out->ops.push_back(op);
  return true;
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
      whole > static_cast<uint64_t>(INT64_MAX) || ns > kMaxTraceTimeNs) {
    return false;  // past the bound, so adding the fraction below cannot overflow
  }
  ns += frac_ns + (round_up ? 1 : 0);
  *out_ns = negative ? -ns : ns;
  return IsTraceTime(*out_ns);
}

}  // namespace internal

}  // namespace titan::trace
