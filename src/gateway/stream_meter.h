// StreamMeter: what the gateway learns from an upstream answer while relaying it untouched:
// for a stream (text/event-stream), the SSE events, the time of the first one (TTFT), the gaps
// between them (ITL), whether "[DONE]" arrived, and the completion tokens in a final "usage"
// object when the replica sends one; for a whole JSON answer, its usage.completion_tokens.
// The bytes themselves are never changed or held back: metering is a side job of the relay.
//
// Hostile input (a replica answering garbage): lines over 1 MiB stop the metering (the relay
// goes on), non-JSON events are counted but not parsed, usage must be a non-negative integer
// below 2^40. Memory is bounded by the SSE parser's line bound.
//
// Thread safety: one meter per response; not thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "src/http/sse.h"

namespace titan::gateway {

class StreamMeter {
 public:
  explicit StreamMeter(bool stream) : stream_(stream) {}

  // A piece of the upstream body arrived at monotonic `now_ns`.
  void OnBody(std::string_view data, int64_t now_ns);
  // The whole body of a non-streamed answer (called once, at its end).
  void OnWholeBody(std::string_view body, int64_t now_ns);

  int64_t first_event_ns() const { return first_event_ns_; }  // 0: none yet
  int64_t last_event_ns() const { return last_event_ns_; }
  uint64_t events() const { return events_; }  // data events, [DONE] excluded
  bool done() const { return done_; }          // saw data: [DONE]
  bool broken() const { return broken_; }      // the stream was not valid SSE (over the bound)
  // Completion tokens: from usage when given, else the number of content events.
  int64_t completion_tokens() const { return usage_tokens_ >= 0 ? usage_tokens_ : events_; }
  bool tokens_from_usage() const { return usage_tokens_ >= 0; }
  // Mean gap between consecutive events, ns (0 with fewer than two).
  double mean_itl_ns() const {
    return events_ > 1 ? static_cast<double>(last_event_ns_ - first_event_ns_) / (events_ - 1) : 0;
  }

 private:
  void OnEvent(std::string_view data, int64_t now_ns);
  bool stream_;
  http::SseParser parser_;
  int64_t first_event_ns_ = 0, last_event_ns_ = 0;
  uint64_t events_ = 0;
  int64_t usage_tokens_ = -1;
  bool done_ = false, broken_ = false;
};

// usage.completion_tokens of a JSON object, or -1 when absent or not a sane integer.
// `*usage_only` (when given) is set when the object carries usage and an empty "choices"
// list: a stream's final usage chunk, which is no token.
int64_t CompletionTokensOf(std::string_view json, bool* usage_only = nullptr);

}  // namespace titan::gateway
