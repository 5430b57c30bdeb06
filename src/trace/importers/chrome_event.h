// Options and number conversions for parsing Chrome-trace-format event objects (the elements of
// Kineto's `traceEvents` and of the legacy autograd profiler's top-level array) into the compact
// model; the event rules themselves are in event_fields.h and chrome_event.cc (FinishEvent).
// Shared by the Kineto and legacy importers.
// Thread safety: stateless functions.
#pragma once

#include <cstdint>
#include <string_view>

#include "src/trace/model.h"

namespace titan::trace {

struct EventParseOptions {
  // Kind given to 'X' events without `cat` (the legacy profiler writes none): CPU ops.
  EventKind default_kind = EventKind::kOther;
};

// Microseconds as parsed by a JSON parser (a double, correctly rounded from the text) to integer
// nanoseconds, recovering the exact decimal the file held: Kineto writes at most 3 decimals, and
// below 8e12 us (92 days; Kineto's relative timestamps) distinct 3-decimal values are distinct
// doubles, so the result is exact. Larger values (fractional epoch microseconds) are rounded
// to the nearest nanosecond of the double. False for NaN, infinities and anything past
// +-kMaxTraceTimeNs.
bool MicrosToNanos(double micros, int64_t* out_ns);

}  // namespace titan::trace
