// Fuzzes the SSE parser (outside input: whatever a server streams). It must never crash or
// grow past its bound, and the events must not depend on how the bytes were split.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/http/sse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 17;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto run = [&](size_t step, std::vector<std::string>* events) {
    titan::http::SseParser parser(4096);
    for (size_t i = 0; i < input.size(); i += step) {
      titan::Status s = parser.Feed(input.substr(i, step), [&](const titan::http::SseEvent& e) {
        if (e.data.size() > 4096) __builtin_trap();
        events->emplace_back(e.data);
      });
      if (!s.ok()) {
        events->push_back("<error>");
        return;
      }
    }
  };
  std::vector<std::string> whole, split;
  run(input.size() + 1, &whole);
  run(piece, &split);
  if (whole != split) __builtin_trap();
  return 0;
}
