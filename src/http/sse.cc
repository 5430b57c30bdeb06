#include "src/http/sse.h"

#include <fmt/format.h>

namespace titan::http {

Status SseParser::Line(std::string_view line, const Callback& on_event) {
  if (line.empty()) {
    if (!data_.empty()) {
      data_.pop_back();  // the '\n' after the last data line
      ++events_;
      on_event(SseEvent{event_, data_, id_});
    }  // an event with no data line is not dispatched
    data_.clear();
    event_.clear();
    saw_field_ = false;
    return OkStatus();
  }
  if (line.front() == ':') return OkStatus();  // comment
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  saw_field_ = true;
  if (field == "data") {
    if (data_.size() + value.size() + 1 > max_line_bytes_) {
      return ResourceExhaustedError(
          fmt::format("an SSE event's data is over {} bytes; the stream is malformed or hostile",
                      max_line_bytes_));
    }
    data_.append(value);
    data_.push_back('\n');
  } else if (field == "event") {
    event_.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) id_.assign(value);
  }
  return OkStatus();
}

Status SseParser::LineTooLong() {
  error_ = ResourceExhaustedError(fmt::format(
      "an SSE line is over {} bytes; the stream is malformed or hostile", max_line_bytes_));
  return error_;
}

Status SseParser::Feed(std::string_view bytes, const Callback& on_event) {
  if (!error_.ok()) return error_;
  while (!bytes.empty()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    size_t end = bytes.find_first_of("\r\n");
    if (end == std::string_view::npos) {
      if (line_.size() + bytes.size() > max_line_bytes_) return LineTooLong();
      line_.append(bytes);
      return OkStatus();
    }
    if (line_.size() + end > max_line_bytes_) return LineTooLong();
    Status status;
    if (line_.empty()) {
      status = Line(bytes.substr(0, end), on_event);  // the common case: no copy
    } else {
      line_.append(bytes.substr(0, end));
      status = Line(line_, on_event);
      line_.clear();
    }
    if (!status.ok()) {
      error_ = status;
      return error_;
    }
    skip_lf_ = bytes[end] == '\r';
    bytes.remove_prefix(end + 1);
  }
  return OkStatus();
}

}  // namespace titan::http
