// Parsers of serve-sim's outside input: the JSON bodies of the OpenAI-compatible endpoints and
// of POST /admin/fault, and the --fault flag's text. Fuzzed by serve_sim_request_fuzzer.cc.
//
// JSON is parsed by simdjson (which validates UTF-8) with a nesting bound (ParseLimits::
// max_depth). Unknown fields of the API bodies are ignored (clients send temperature, top_p,
// ...); fields whose value is JSON null count as absent. Every error is INVALID_ARGUMENT with a
// message that names the field and what is allowed, and `*param` (when not null) is set to the
// field's name ("" for a body that is not JSON at all): the HTTP layer answers 400 with both.
//
// Thread safety: pure functions (each thread keeps its own simdjson parser).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/serve_sim/tokenizer.h"

namespace titan::serve_sim {

struct ParseLimits {
  int64_t max_model_len = 8192;  // prompt + max_tokens
  int64_t max_tokens_limit = 1'000'000;
  int64_t default_max_tokens = 16;    // when the request gives none
  int64_t block_tokens = 16;          // for the prefix-cache block hashes
  int64_t max_inputs = 2048;          // strings in one embeddings request
  int64_t max_embedding_dim = 65536;  // "dimensions" of an embeddings request
  int max_depth = 32;                 // JSON nesting
};

// POST /v1/completions (chat = false) and POST /v1/chat/completions (chat = true).
//  - completions: "prompt" is a string or a list of one string;
//  - chat: "messages" is a non-empty list of {"role": string, "content": string, a list of
//    {"type":"text","text":...} parts, or null}; the prompt is the contents joined by "\n";
//  - "max_tokens" (chat also "max_completion_tokens", which wins): integer in
//    [1, max_tokens_limit], default default_max_tokens; prompt + max_tokens <= max_model_len;
//  - "n": only 1; "stream": bool; "stream_options": {"include_usage": bool};
//  - "ignore_eos": bool; "seed": integer (the output depends only on it); "model": string.
struct GenerateRequest {
  bool chat = false;
  std::string model;  // "" when absent
  PromptTokens prompt;
  int64_t max_tokens = 16;
  bool stream = false;
  bool include_usage = false;
  bool ignore_eos = false;
  std::optional<uint64_t> seed;
};
Result<GenerateRequest> ParseGenerateRequest(std::string_view body, bool chat,
                                             const ParseLimits& limits, std::string* param);

// POST /v1/embeddings: "input" is a string or a non-empty list of at most max_inputs strings,
// each at most max_model_len tokens; "encoding_format" only "float"; "dimensions" in
// [1, max_embedding_dim] (default: the server's).
struct EmbeddingRequest {
  std::string model;
  std::vector<int64_t> input_tokens;   // per input
  std::vector<uint64_t> input_hashes;  // per input, of its text: seeds its vector
  int64_t total_tokens = 0;
  std::optional<int64_t> dimensions;
};
Result<EmbeddingRequest> ParseEmbeddingRequest(std::string_view body, const ParseLimits& limits,
                                               std::string* param);

// POST /tokenize: vLLM's {"prompt": string} or {"messages": [...]}, llama.cpp's
// {"content": string}. Returns the text whose tokens are asked for.
Result<std::string> ParseTokenizeRequest(std::string_view body, const ParseLimits& limits,
                                         std::string* param);

// POST /admin/fault: an object with any of "stall" (a duration string such as "2s", or a number
// of seconds), "slow" (factor in (0, 1e6]; 1 restores), "error_rate" (in [0, 1]), "crash"
// (true). Unknown fields are errors here (a typo must not pass silently); an empty object too.
struct AdminFault {
  std::optional<int64_t> stall_ns;
  std::optional<double> slow;
  std::optional<double> error_rate;
  bool crash = false;
};
Result<AdminFault> ParseAdminFault(std::string_view body, std::string* param);

// --fault TEXT: "stall=DURATION@TIME", "slow=FACTOR@TIME", "error-rate=P[@TIME]",
// "crash@TIME". TIME is a duration after start ("10s", "0"), in titan's duration syntax.
struct FaultSpec {
  enum class Kind { kStall, kSlow, kErrorRate, kCrash };
  Kind kind = Kind::kStall;
  int64_t at_ns = 0;
  int64_t duration_ns = 0;  // kStall
  double value = 0;         // kSlow: factor; kErrorRate: probability
};
Result<FaultSpec> ParseFaultSpec(std::string_view text);

}  // namespace titan::serve_sim
