#include "src/trace/importers/event_batch.h"

#include <fmt/format.h>
#include <simdjson.h>

namespace titan::trace {
namespace {

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
                       const EventParseOptions& options, int64_t doc_offset, RankTrace* out) {
#ifdef TITAN_TRACE_ONDEMAND_AVX2
  if (kUseOnDemand) {
    return internal::ParseEventBatchOnDemand(json, len, capacity, options, doc_offset, out);
  }
#endif
  return internal::ParseEventBatchDom(json, len, capacity, options, doc_offset, out);
}

namespace internal {

Status ParseEventBatchDom(const char* json, size_t len, size_t capacity,
                          const EventParseOptions& options, int64_t doc_offset, RankTrace* out) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(json, len, false).get(root)) {
    return InvalidArgumentError(fmt::format("malformed JSON in trace events after byte {} ({})",
                                            doc_offset, simdjson::error_message(error)));
  }
  simdjson::dom::array events;
  if (root.get_array().get(events)) return InvalidArgumentError("batch is not an array");
  for (simdjson::dom::element element : events) {
    simdjson::dom::object event;
    if (element.get_object().get(event)) {
      return InvalidArgumentError(fmt::format(
          "a trace event after byte {} is not a JSON object; not a profiler trace", doc_offset));
    }
    TITAN_RETURN_IF_ERROR(ParseChromeEvent(event, options, OffsetMap{doc_offset}, out));
  }
  return OkStatus();
}

}  // namespace internal
}  // namespace titan::trace
