// Fuzzes the stream meter (outside input: whatever a replica streams back). It must never
// crash, and what it counts must not depend on how the bytes were split on the wire.
// CompletionTokensOf must return -1 or a sane count on anything.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/gateway/stream_meter.h"

namespace {

struct Counts {
  uint64_t events;
  bool done;
  int64_t tokens;
  bool from_usage;
  bool broken;
  bool operator==(const Counts&) const = default;
};

Counts Summary(const titan::gateway::StreamMeter& m) {
  return {m.events(), m.done(), m.completion_tokens(), m.tokens_from_usage(), m.broken()};
}

void CheckMeter(const titan::gateway::StreamMeter& m) {
  if (m.completion_tokens() < 0) __builtin_trap();
  if (m.tokens_from_usage() && m.completion_tokens() >= (int64_t{1} << 40)) __builtin_trap();
  if (!m.tokens_from_usage() && m.completion_tokens() != static_cast<int64_t>(m.events())) {
    __builtin_trap();
  }
  if (m.mean_itl_ns() < 0) __builtin_trap();
  if (m.events() > 0 && (m.first_event_ns() <= 0 || m.last_event_ns() < m.first_event_ns())) {
    __builtin_trap();
  }
}

void CheckTokens(std::string_view json) {
  const int64_t tokens = titan::gateway::CompletionTokensOf(json);
  if (tokens != -1 && (tokens < 0 || tokens >= (int64_t{1} << 40))) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The first byte picks where to cut, and the size of the pieces of a third feed.
  const size_t cut = input.empty() ? 0 : (size_t{data[0]} * 257) % (input.size() + 1);
  const size_t piece = 1 + data[0] % 13;

  titan::gateway::StreamMeter whole(true);
  whole.OnBody(input, 1000);
  CheckMeter(whole);

  titan::gateway::StreamMeter two(true);
  two.OnBody(input.substr(0, cut), 1000);
  two.OnBody(input.substr(cut), 2000);
  CheckMeter(two);

  titan::gateway::StreamMeter pieces(true);
  int64_t now = 1000;
  for (size_t i = 0; i < input.size(); i += piece) pieces.OnBody(input.substr(i, piece), now += 7);
  CheckMeter(pieces);

  const Counts w = Summary(whole);
  // The meter stops at the same byte however the stream was cut, so even a broken stream
  // has been counted alike up to there.
  if (w.broken != Summary(two).broken || w.broken != Summary(pieces).broken) __builtin_trap();
  if (!w.broken && (w != Summary(two) || w != Summary(pieces))) __builtin_trap();

  // A whole (non-streamed) body, and usage parsing on its own.
  titan::gateway::StreamMeter body(false);
  body.OnBody(input, 1000);
  if (body.events() != 0 || body.broken()) __builtin_trap();
  body.OnWholeBody(input, 5000);
  CheckMeter(body);
  if (body.first_event_ns() != 5000 || body.events() != 0) __builtin_trap();
  CheckTokens(input);
  // Wrapped so that the cheap "usage" pre-check passes and the parser does the work.
  std::string wrapped = "{\"choices\":[],\"usage\":{\"completion_tokens\":";
  wrapped.append(input);
  wrapped.append("}}");
  CheckTokens(wrapped);
  return 0;
}
