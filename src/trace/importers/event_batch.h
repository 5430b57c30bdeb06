// Parsing of a batch of trace events ("[event, event, ...]", padded for simdjson) into the model.
//
// Two implementations behind one function: simdjson On-Demand compiled for AVX2 (chosen at run
// time when the CPU has AVX2/BMI/PCLMUL; reads only the fields titan uses, about twice the speed)
// and the DOM API with simdjson's own run-time kernel selection (any CPU).
// Both read an event's fields through one handler (event_fields.h). An event with a malformed
// ph, ts or dur is skipped and counted in ImportStats (and the first one's offset noted); errors
// (JSON that does not parse) say what is wrong and the document byte offset of the batch, and
// JsonStream narrows them to the offending event.
// Thread safety: ParseEventBatch keeps per-thread parsers; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/status.h"
#include "src/trace/importers/chrome_event.h"
#include "src/trace/model.h"

namespace titan::trace {

// Where the first event skipped as malformed is (the counts are in ImportStats).
struct FirstMalformedEvent {
  int64_t offset = -1;  // document byte offset of the event; -1: none
  uint8_t field = 0;    // the internal::kMalformed* bit it is counted under
};

// `json` holds `len` bytes and is readable (padded) up to `capacity` >= len + 64.
// `doc_offset` is the document offset of json[0] (for messages). `first_malformed`, when given,
// receives the first malformed event's offset unless it already holds one.
Status ParseEventBatch(const char* json, size_t len, size_t capacity,
                       const EventParseOptions& options, int64_t doc_offset, RankTrace* out,
                       FirstMalformedEvent* first_malformed = nullptr);

// Appends `part`, batches parsed into a RankTrace of their own (on another thread), to `into`
// as if they had been parsed there: strings re-interned, collective indexes moved, counts and
// HTA dtype flags added. Only what ParseEventBatch writes is moved; `part` is left empty.
void AppendParsedBatch(RankTrace* part, RankTrace* into);

// Which implementation ParseEventBatch uses on this machine: "ondemand-avx2" or "dom".
const char* EventBatchParserName();

namespace internal {
// Defined in event_batch_ondemand.cc (compiled with AVX2 flags) when available.
Status ParseEventBatchOnDemand(const char* json, size_t len, size_t capacity,
                               const EventParseOptions& options, int64_t doc_offset, RankTrace* out,
                               FirstMalformedEvent* first_malformed = nullptr);
Status ParseEventBatchDom(const char* json, size_t len, size_t capacity,
                          const EventParseOptions& options, int64_t doc_offset, RankTrace* out,
                          FirstMalformedEvent* first_malformed = nullptr);
// Exact decimal microseconds (a JSON number token) to nanoseconds; see chrome_event.h.
bool ParseMicrosToken(std::string_view token, int64_t* out_ns, bool* is_float);
// Fields present but unusable (EventFields::malformed); the event is counted under the first of
// ph, ts, dur that is.
inline constexpr uint8_t kMalformedPh = 1, kMalformedTs = 2, kMalformedDur = 4;
// What a parser saw in one event besides the op's own fields.
struct EventFields {
  char ph = 0;  // first character of "ph"; '?' when empty
  bool has_cat = false, has_ts = false, has_dur = false, has_name = false;
  bool dur_is_float = false;  // dur written with a fraction or exponent
  bool cat_is_trace = false;  // cat "Trace" (Kineto's span of the whole trace)
  uint8_t malformed = 0;      // kMalformed* bits
};
// Shared tail of event parsing: counts, the HTA dtype flags and appending the op. False when
// the event is skipped as malformed (counted in ImportStats::malformed_*).
bool FinishEvent(const EventFields& f, const EventParseOptions& options, Op op, RankTrace* out);
// Notes the `index`-th event of the batch `json` as the first malformed one unless `first` is
// null or already holds one.
void NoteMalformedEvent(const char* json, size_t len, int64_t doc_offset, size_t index,
                        uint8_t malformed, FirstMalformedEvent* first);
// "a \"ts\" that is not a number of microseconds", ... for a kMalformed* bit.
std::string_view MalformedFieldText(uint8_t field);
EventKind KindFromCategory(std::string_view cat);
// Out-of-line model updates (keep template instantiations out of the AVX2 file).
StringId InternString(RankTrace* out, std::string_view s);
int32_t AddCollective(RankTrace* out, const CollectiveArgs& args);
}  // namespace internal

}  // namespace titan::trace
