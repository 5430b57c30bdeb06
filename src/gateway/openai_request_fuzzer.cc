// Fuzzes the gateway's request inspector (client bodies are outside input): it must never
// crash, and what it accepts must obey RequestInfo's contract. The first byte picks the
// endpoint and the limits; the rest is the body (and, for EndpointForPath, a path).
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "src/gateway/openai_request.h"

using namespace titan::gateway;

namespace {

bool Utf8(std::string_view text) { return simdjson::validate_utf8(text.data(), text.size()); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  constexpr Endpoint kEndpoints[] = {Endpoint::kCompletions, Endpoint::kChatCompletions,
                                     Endpoint::kEmbeddings, Endpoint::kOther};
  const Endpoint endpoint = kEndpoints[data[0] % 4];
  RequestLimits limits;
  if (data[0] & 0x80) {  // small limits, so that the bounds are reached
    limits.max_depth = (data[0] >> 2) % 8;
    limits.max_inputs = (data[0] >> 5) % 4;
  }

  const Endpoint routed = EndpointForPath(body);
  if (EndpointName(routed).empty()) __builtin_trap();

  std::string param;
  titan::Result<RequestInfo> r = InspectRequest(endpoint, body, limits, &param);
  if (endpoint == Endpoint::kOther) {
    if (!r.ok()) __builtin_trap();  // never fails
    if (r->max_tokens != -1 || r->n != 1 || r->inputs != 1 || !r->prompt_text.empty() ||
        !r->user.empty() || r->include_usage || r->prompt_is_list || r->prompt_token_ids != 0) {
      __builtin_trap();
    }
  }
  if (!r.ok()) {
    if (r.status().code() != titan::StatusCode::kInvalidArgument) __builtin_trap();
    if (r.status().message().empty() || !Utf8(r.status().message()) || !Utf8(param)) {
      __builtin_trap();
    }
    return 0;
  }
  const RequestInfo& info = *r;
  if (info.endpoint != endpoint) __builtin_trap();
  if (info.max_tokens < -1 || info.n < 1 || info.inputs < 1) __builtin_trap();
  if (info.prompt_is_list && info.inputs > limits.max_inputs) __builtin_trap();
  if (!info.prompt_is_list && info.inputs != 1) __builtin_trap();
  if (info.prompt_token_ids < 0) __builtin_trap();
  if (info.prompt_token_ids > 0 && !info.prompt_text.empty()) __builtin_trap();
  if (endpoint == Endpoint::kChatCompletions && (info.prompt_is_list || info.prompt_token_ids))
    __builtin_trap();
  // Everything comes from the body: no more bytes than it has (each "\n" joins two items, which
  // a comma separates in the body).
  if (info.prompt_text.size() > body.size() || info.model.size() > body.size() ||
      info.user.size() > body.size()) {
    __builtin_trap();
  }
  if (!Utf8(info.prompt_text) || !Utf8(info.model) || !Utf8(info.user)) __builtin_trap();
  // Deterministic.
  titan::Result<RequestInfo> again = InspectRequest(endpoint, body, limits, nullptr);
  if (!again.ok() || again->prompt_text != info.prompt_text || again->inputs != info.inputs ||
      again->max_tokens != info.max_tokens) {
    __builtin_trap();
  }
  return 0;
}
