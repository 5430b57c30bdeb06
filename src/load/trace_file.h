// Trace replay files: when each request of a recorded workload was sent and how long it was.
//
// Formats, detected from the content:
//  * Azure LLM inference trace CSV (the public 2023 and 2024 traces): a header naming the
//    columns TIMESTAMP, ContextTokens and GeneratedTokens (any order, other columns ignored,
//    names case-insensitive), rows like `2023-11-16 18:15:46.6805900,4808,10`. TIMESTAMP is
//    `YYYY-MM-DD HH:MM:SS[.fraction]` (or a 'T' between date and time), 0-9 fractional digits.
//  * JSON lines, one object per line, in either of two forms (unknown keys are ignored):
//      mooncake: {"timestamp": 27482, "input_length": 6955, "output_length": 52,
//                 "hash_ids": [46, 47]}          timestamp in ms; hash ids of 512-token blocks
//      titan:    {"time_s": 0.5, "input_tokens": 100, "output_tokens": 20, "hash_ids": [..]}
//                                                time in seconds; hash_ids optional
// Blank lines are skipped; a UTF-8 byte order mark and CRLF line ends are accepted.
//
// The requests come back sorted by time (stably: equal times keep file order), with offsets
// relative to the earliest request, whose offset is 0. A trace may be out of order by up to
// kMaxBackwardNs (the Azure traces are in order; a larger step back means a concatenated or
// corrupt file and is an error).
//
// Bounds (errors, never truncation): lines up to kMaxTraceLineBytes, up to kMaxTraceRows
// requests, token counts in [0, kMaxTraceTokens], times within kMaxTraceSpanNs of the first row.
// Errors are INVALID_ARGUMENT ("trace.csv:17:21: expected an integer number of ContextTokens,
// got 'abc'"; lines and columns count from 1, columns in bytes) or OUT_OF_RANGE for the bounds.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan::load {

struct TraceRequest {
  int64_t offset_ns = 0;  // planned send time from the run start
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  std::vector<uint64_t> hash_ids;  // shared-prefix block ids (mooncake); empty when none

  friend bool operator==(const TraceRequest&, const TraceRequest&) = default;
};

inline constexpr size_t kMaxTraceLineBytes = size_t{1} << 20;
inline constexpr size_t kMaxTraceRows = 50'000'000;
inline constexpr size_t kMaxTraceFileBytes = size_t{4} << 30;
inline constexpr int64_t kMaxTraceTokens = 10'000'000;
inline constexpr int64_t kMaxBackwardNs = int64_t{60} * 1'000'000'000;
inline constexpr int64_t kMaxTraceSpanNs = int64_t{366} * 24 * 3600 * 1'000'000'000;

// Parses the text of a trace; `name` (usually the path) prefixes every error.
Result<std::vector<TraceRequest>> ParseTrace(std::string_view text, std::string_view name);

// Reads and parses the file at `path` (at most kMaxTraceFileBytes).
Result<std::vector<TraceRequest>> ReadTraceFile(const std::string& path);

}  // namespace titan::load
