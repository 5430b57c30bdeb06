// Parsing of a batch of trace events ("[event, event, ...]", padded for simdjson) into the model.
//
// Two implementations behind one function: simdjson On-Demand compiled for AVX2 (chosen at run
// time when the CPU has AVX2/BMI/PCLMUL; reads only the fields titan uses, about twice the speed)
// and the DOM API with simdjson's own run-time kernel selection (any CPU).
// Errors say what is wrong and the document byte offset of the batch; JsonStream narrows them to
// the offending event.
// Thread safety: ParseEventBatch keeps per-thread parsers; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/status.h"
#include "src/trace/importers/chrome_event.h"
#include "src/trace/model.h"

namespace titan::trace {

// `json` holds `len` bytes and is readable (padded) up to `capacity` >= len + 64.
// `doc_offset` is the document offset of json[0] (for messages).
Status ParseEventBatch(const char* json, size_t len, size_t capacity,
                       const EventParseOptions& options, int64_t doc_offset, RankTrace* out);

// Which implementation ParseEventBatch uses on this machine: "ondemand-avx2" or "dom".
const char* EventBatchParserName();

namespace internal {
// Defined in event_batch_ondemand.cc (compiled with AVX2 flags) when available.
Status ParseEventBatchOnDemand(const char* json, size_t len, size_t capacity,
                               const EventParseOptions& options, int64_t doc_offset,
                               RankTrace* out);
Status ParseEventBatchDom(const char* json, size_t len, size_t capacity,
                          const EventParseOptions& options, int64_t doc_offset, RankTrace* out);
// Exact decimal microseconds (a JSON number token) to nanoseconds; see chrome_event.h.
bool ParseMicrosToken(std::string_view token, int64_t* out_ns, bool* is_float);
// What a parser saw in one event besides the op's own fields.
struct EventFields {
  char ph = 0;  // first character of "ph"; '?' when empty
  bool has_cat = false, has_ts = false, has_dur = false, has_name = false;
  bool dur_is_float = false;  // dur written with a fraction or exponent
  bool cat_is_trace = false;  // cat "Trace" (Kineto's span of the whole trace)
  std::string_view name;      // valid until the op is appended
};
// Shared tail of event parsing: counts, the HTA dtype flags and appending the op.
void FinishEvent(const EventFields& f, const EventParseOptions& options, Op op, RankTrace* out);
EventKind KindFromCategory(std::string_view cat);
// Out-of-line model updates (keep template instantiations out of the AVX2 file).
StringId InternString(RankTrace* out, std::string_view s);
std::string_view NameOf(const RankTrace* out, StringId id);
int32_t AddCollective(RankTrace* out, const CollectiveArgs& args);
}  // namespace internal

}  // namespace titan::trace
