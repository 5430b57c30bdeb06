// What titan load records of each request. Times are monotonic ns offsets from the run's start
// (the instant its first request was planned), so records of one run share one clock; the
// run's wall-clock start is kept beside them (RunRecords::start_wall_ns) to line them up with
// server metrics, agent telemetry and profiler traces.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace titan::load {

// Why a request did not succeed; kNone for a 2xx answer read to its end.
enum class RequestError : uint8_t {
  kNone = 0,
  kConnect,         // no connection (refused, unreachable, connect timeout)
  kTimeout,         // no complete answer within --timeout
  kClosed,          // the server closed the connection mid-answer
  kMalformedHttp,   // not valid HTTP
  kHttp4xx,         // 4xx other than 429
  kHttp429,         // rate limited / queue full
  kHttp5xx,         // 5xx
  kMalformedBody,   // 2xx whose body is not the API's JSON
  kStreamCut,       // an SSE stream that ended without [DONE]
  kMalformedEvent,  // an SSE event whose data is not JSON (or over the line bound)
  kNotSent,         // planned but never sent: the run ended first (--drain limit)
};
inline constexpr int kRequestErrorCount = 12;
std::string_view RequestErrorName(RequestError error);

// Where a record's token counts came from.
enum class TokenSource : uint8_t {
  kUsage = 0,  // the server's usage object (stream_options.include_usage when streaming)
  kChunks,     // counted content chunks (one token per non-empty chunk: a lower bound)
  kPlanned,    // nothing measured (errors): the planned counts
};
std::string_view TokenSourceName(TokenSource source);

inline constexpr int64_t kNever = -1;  // a time that did not happen

struct RequestRecord {
  uint64_t index = 0;               // request number in planned order
  int64_t planned_ns = 0;           // when the schedule planned to send it
  int64_t dispatched_ns = 0;        // when the client took it up (planned + schedule lag)
  int64_t slot_ns = kNever;         // when it got a slot under --max-concurrency (= dispatched
                                    // without a cap)
  int64_t sent_ns = kNever;         // when its bytes were handed to the socket (after the slot and,
                                    // for a new connection, the connect)
  int64_t first_byte_ns = kNever;   // response head
  int64_t first_token_ns = kNever;  // first non-empty content (streaming), or the end
  int64_t last_token_ns = kNever;   // last non-empty content
  int64_t end_ns = kNever;          // response read to its end, or the failure
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t planned_prompt_tokens = 0;
  int64_t planned_output_tokens = 0;
  uint32_t content_chunks = 0;  // SSE events that carried content
  uint32_t itl_begin = 0;       // this request's gaps in RunRecords::itl_ns
  uint32_t itl_count = 0;
  int16_t http_status = 0;
  RequestError error = RequestError::kNone;
  TokenSource tokens_from = TokenSource::kPlanned;
  int32_t group = -1;  // shared-prefix group, -1 when none
  // What the server said of its own timing (llama.cpp's `timings`), -1 when absent.
  double server_prompt_ms = -1;
  double server_predicted_per_token_ms = -1;
  double server_predicted_ms = -1;
  int32_t server_cache_tokens = -1;

  bool ok() const { return error == RequestError::kNone; }
};

}  // namespace titan::load
