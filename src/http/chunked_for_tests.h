// For tests that read an HTTP/1.1 answer off a raw socket: its chunked body, decoded.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace titan::http {

// The body of `raw` (a whole response: head, then a chunked body); nullopt when the head or
// the chunked framing is incomplete (a cut-off answer) or malformed. Chunk extensions and
// trailers are not expected.
inline std::optional<std::string> DecodeChunkedForTests(std::string_view raw) {
  size_t at = raw.find("\r\n\r\n");
  if (at == std::string_view::npos) return std::nullopt;
  at += 4;
  std::string body;
  for (;;) {
    const size_t line_end = raw.find("\r\n", at);
    if (line_end == std::string_view::npos) return std::nullopt;
    size_t size = 0;
    try {
      size = std::stoul(std::string(raw.substr(at, line_end - at)), nullptr, 16);
    } catch (...) {
      return std::nullopt;
    }
    if (size == 0) return body;
    if (line_end + 2 + size + 2 > raw.size()) return std::nullopt;
    body.append(raw.substr(line_end + 2, size));
    at = line_end + 2 + size + 2;
  }
}

}  // namespace titan::http
