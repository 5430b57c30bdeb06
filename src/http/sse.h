// Incremental parser of Server-Sent Events (the WHATWG event-stream format that OpenAI-style
// streaming APIs send: "data: {...}\n\n" ... "data: [DONE]\n\n").
//
// Bytes are fed as they arrive, split anywhere (inside a line, between "\r" and "\n"); each
// complete event (ended by a blank line) is handed to the callback with its `data` lines
// joined by "\n". Comments (":...") and unknown fields are skipped; `retry` is ignored. An event
// with no data line is not dispatched (as the standard says). Lines longer than
// `max_line_bytes`, or an event whose data grows past it, fail the stream with
// RESOURCE_EXHAUSTED instead of growing memory.
//
// Thread safety: one parser per stream; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace titan::http {

struct SseEvent {
  std::string_view event;  // "" when the event had no event: field ("message" by the standard)
  std::string_view data;
  std::string_view id;
};

class SseParser {
 public:
  using Callback = std::function<void(const SseEvent&)>;
  explicit SseParser(size_t max_line_bytes = 1 << 20) : max_line_bytes_(max_line_bytes) {}

  // Parses `bytes`, calling `on_event` for every event completed by them. After an error every
  // further call returns the same error.
  Status Feed(std::string_view bytes, const Callback& on_event);

  uint64_t events() const { return events_; }
  // Whether bytes of an unfinished event are pending (a stream that ended here was cut).
  bool has_partial_event() const { return !line_.empty() || !data_.empty() || saw_field_; }

 private:
  Status Line(std::string_view line, const Callback& on_event);
  Status LineTooLong();
  const size_t max_line_bytes_;
  std::string line_;  // an unfinished line carried between Feed calls
  std::string data_;
  std::string event_;
  std::string id_;
  bool saw_field_ = false;
  bool skip_lf_ = false;  // the last byte was '\r': a following '\n' belongs to it
  uint64_t events_ = 0;
  Status error_;
};

}  // namespace titan::http
