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
// Shared tail of event parsing: counts, the HTA dtype flag and appending the op.
void FinishEvent(char ph, bool has_cat, bool has_ts, bool has_dur, bool has_name,
                 std::string_view name, const EventParseOptions& options, Op op, RankTrace* out);
EventKind KindFromCategory(std::string_view cat);
// Out-of-line model updates (keep template instantiations out of the AVX2 file).
StringId InternString(RankTrace* out, std::string_view s);
std::string_view NameOf(const RankTrace* out, StringId id);
int32_t AddCollective(RankTrace* out, const CollectiveArgs& args);
}  // namespace internal

}  // namespace titan::trace
