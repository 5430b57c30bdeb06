// Parsing of one Chrome-trace-format event object (the elements of Kineto's `traceEvents` and of
// the legacy autograd profiler's top-level array) into the compact model. Shared by the Kineto
// and legacy importers.
// Thread safety: stateless functions; each call touches only `out`.
#pragma once

#include <cstdint>
#include <string_view>

#include <simdjson.h>

#include "src/base/status.h"
#include "src/trace/importers/json_stream.h"
#include "src/trace/model.h"

namespace titan::trace {

struct EventParseOptions {
  // Kind given to 'X' events without `cat` (the legacy profiler writes none): CPU ops.
  EventKind default_kind = EventKind::kOther;
};

// Appends the event (if it is an 'X' event) to `out->ops` and updates `out->stats`.
// `offsets` maps positions to document byte offsets for error messages.
Status ParseChromeEvent(simdjson::dom::object event, const EventParseOptions& options,
                        const OffsetMap& offsets, RankTrace* out);

// Microseconds as parsed by a JSON parser (a double, correctly rounded from the text) to integer
// nanoseconds, recovering the exact decimal the file held: Kineto writes at most 3 decimals, and
// below 8e12 us (92 days; Kineto's relative timestamps) distinct 3-decimal values are distinct
// doubles, so the result is exact. Larger values (fractional epoch microseconds) are rounded
// to the nearest nanosecond of the double. False for NaN, infinities and overflow.
bool MicrosToNanos(double micros, int64_t* out_ns);

}  // namespace titan::trace
