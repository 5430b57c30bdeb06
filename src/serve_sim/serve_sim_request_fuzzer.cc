// Fuzzes serve-sim's parsers of outside input: the JSON bodies of every endpoint, the admin
// fault body and the --fault text. They must never crash, and what they accept must respect
// the limits the server relies on.
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/serve_sim/request.h"
#include "src/serve_sim/tokenizer.h"

using namespace titan::serve_sim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  ParseLimits limits;
  limits.max_model_len = 64;  // small, so that the bounds are reached
  limits.max_tokens_limit = 1000;
  limits.max_inputs = 8;
  std::string param;
  switch (data[0] % 6) {
    case 0:
    case 1: {
      const bool chat = data[0] % 6 == 1;
      titan::Result<GenerateRequest> r = ParseGenerateRequest(input, chat, limits, &param);
      if (r.ok()) {
        if (r->max_tokens < 1 || r->max_tokens > limits.max_tokens_limit) __builtin_trap();
        if (r->prompt.count + r->max_tokens > limits.max_model_len) __builtin_trap();
        if (static_cast<int64_t>(r->prompt.block_hashes.size()) !=
            r->prompt.count / limits.block_tokens) {
          __builtin_trap();
        }
      }
      break;
    }
    case 2: {
      titan::Result<EmbeddingRequest> r = ParseEmbeddingRequest(input, limits, &param);
      if (r.ok()) {
        if (r->input_tokens.empty() ||
            static_cast<int64_t>(r->input_tokens.size()) > limits.max_inputs) {
          __builtin_trap();
        }
        for (int64_t t : r->input_tokens) {
          if (t > limits.max_model_len) __builtin_trap();
        }
      }
      break;
    }
    case 3: {
      titan::Result<std::string> r = ParseTokenizeRequest(input, limits, &param);
      if (r.ok() && static_cast<int64_t>(TokenIds(*r).size()) != CountTokens(*r)) {
        __builtin_trap();
      }
      break;
    }
    case 4: {
      titan::Result<AdminFault> r = ParseAdminFault(input, &param);
      if (r.ok()) {
        if (r->stall_ns && *r->stall_ns <= 0) __builtin_trap();
        if (r->slow && !(*r->slow > 0)) __builtin_trap();
        if (r->error_rate && !(*r->error_rate >= 0 && *r->error_rate <= 1)) __builtin_trap();
      }
      break;
    }
    case 5: {
      titan::Result<FaultSpec> r = ParseFaultSpec(input);
      if (r.ok() && r->at_ns < 0) __builtin_trap();
      break;
    }
  }
  return 0;
}
