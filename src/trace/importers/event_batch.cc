#include "src/trace/importers/event_batch.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "src/trace/importers/event_args.h"
#include "src/trace/importers/event_fields.h"

namespace titan::trace {
namespace {

// The DOM side of event_fields.h: the whole batch was validated when it was parsed.
struct DomJson {
  using Value = simdjson::dom::element;
  // A number of microseconds in nanoseconds; `is_float` when written with a fraction/exponent.
  static bool Micros(Value v, int64_t* ns, bool* is_float) {
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
  static bool IsValid(Value) { return true; }
  static void Args(Value v, RankTrace* out, Op* op) {
    simdjson::dom::object args;
    if (v.get_object().get(args)) return;
    internal::ArgsState state;
    for (auto [key, value] : args) internal::ApplyArg(key, value, out, op, &state);
    internal::FinishArgs(state, out, op);
  }
};

bool CpuHasAvx2() {
#if defined(TITAN_TRACE_ONDEMAND_AVX2) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
         __builtin_cpu_supports("pclmul");
#else
  return false;
#endif
}

const bool kUseOnDemand = CpuHasAvx2();

}  // namespace

const char* EventBatchParserName() { return kUseOnDemand ? "ondemand-avx2" : "dom"; }

Status ParseEventBatch(const char* json, size_t len, size_t capacity,
                       const EventParseOptions& options, int64_t doc_offset, RankTrace* out,
                       FirstMalformedEvent* first_malformed) {
#ifdef TITAN_TRACE_ONDEMAND_AVX2
  if (kUseOnDemand) {
    return internal::ParseEventBatchOnDemand(json, len, capacity, options, doc_offset, out,
                                             first_malformed);
  }
#endif
  return internal::ParseEventBatchDom(json, len, capacity, options, doc_offset, out,
                                      first_malformed);
}

void AppendParsedBatch(RankTrace* part, RankTrace* into) {
  std::vector<StringId> ids(part->strings.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = into->strings.Intern(part->strings.Get(static_cast<StringId>(i)));
  }
  const auto collective_base = static_cast<int32_t>(into->collectives.size());
  for (CollectiveArgs c : part->collectives) {
    for (StringId* s : {&c.collective_name, &c.process_group, &c.process_group_desc,
                        &c.process_group_ranks, &c.dtype}) {
      *s = ids[*s];
    }
    into->collectives.push_back(c);
  }
  if (into->stats.events == 0) into->first_op_is_first_event = part->first_op_is_first_event;
  for (Op op : part->ops) {
    op.name = ids[op.name];
    if (op.collective >= 0) op.collective += collective_base;
    into->ops.push_back(op);
  }
  ImportStats& s = into->stats;
  const ImportStats& p = part->stats;
  static_assert(sizeof(ImportStats) == 11 * sizeof(uint64_t), "add a new count below");
  s.events += p.events;
  s.complete_events += p.complete_events;
  s.flow_events += p.flow_events;
  s.metadata_events += p.metadata_events;
  s.other_phase_events += p.other_phase_events;
  s.unknown_category += p.unknown_category;
  s.negative_durations += p.negative_durations;
  s.missing_fields += p.missing_fields;
  s.malformed_ph += p.malformed_ph;
  s.malformed_ts += p.malformed_ts;
  s.malformed_dur += p.malformed_dur;
  into->hta_float_ts |= part->hta_float_ts;
  into->hta_ts_missing |= part->hta_ts_missing;
  into->hta_dur_missing |= part->hta_dur_missing;
  into->hta_dur_float |= part->hta_dur_float;
  std::vector<Op> ops = std::move(part->ops);  // keeps its capacity for the next batch
  ops.clear();
  *part = RankTrace();
  part->ops = std::move(ops);
}

namespace internal {

Status ParseEventBatchDom(const char* json, size_t len, size_t capacity,
                          const EventParseOptions& options, int64_t doc_offset, RankTrace* out,
                          FirstMalformedEvent* first_malformed) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(json, len, false).get(root)) {
    return InvalidArgumentError(fmt::format("malformed JSON in trace events after byte {} ({})",
                                            doc_offset, simdjson::error_message(error)));
  }
  simdjson::dom::array events;
  if (root.get_array().get(events)) return InvalidArgumentError("batch is not an array");
  size_t index = 0;
  for (simdjson::dom::element element : events) {
    simdjson::dom::object event;
    if (element.get_object().get(event)) {
      return InvalidArgumentError(fmt::format(
          "a trace event after byte {} is not a JSON object; not a profiler trace", doc_offset));
    }
    out->stats.events++;
    Op op;
    op.kind = options.default_kind;
    EventFields f;
    for (auto [key, v] : event) ApplyEventField<DomJson>(key, v, out, &op, &f);
    if (!FinishEvent(f, options, op, out)) {
      NoteMalformedEvent(json, len, doc_offset, index, f.malformed, first_malformed);
    }
    ++index;
  }
  return OkStatus();
}

void NoteMalformedEvent(const char* json, size_t len, int64_t doc_offset, size_t index,
                        uint8_t malformed, FirstMalformedEvent* first) {
  if (first == nullptr || first->offset >= 0) return;
  // The index-th element of "[{...}, {...}, ...]": a scan that skips strings.
  size_t at = 0, seen = 0;
  int depth = 0;
  for (size_t i = 0; i < len; ++i) {
    char c = json[i];
    if (c == '"') {
      for (++i; i < len && json[i] != '"'; ++i) {
        if (json[i] == '\\') ++i;
      }
    } else if (c == '{' || c == '[') {
      if (depth == 1 && seen++ == index) {
        at = i;
        break;
      }
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  first->offset = doc_offset + static_cast<int64_t>(at);
  first->field = malformed & kMalformedPh   ? kMalformedPh
                 : malformed & kMalformedTs ? kMalformedTs
                                            : kMalformedDur;
}

}  // namespace internal
}  // namespace titan::trace
