// The OpenAI-compatible wire format as titan load speaks it: request bodies for
// /v1/completions, /v1/chat/completions and /v1/embeddings, and the parts of responses and
// streamed chunks that timing needs (whether a chunk carried content, usage, llama.cpp's
// `timings`).
//
// Thread safety: ResponseParser is not thread-safe (one per event loop); the rest is pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "src/base/status.h"
#include "src/base/text.h"
#include "src/load/prompts.h"

namespace titan::load {

enum class Api { kCompletions, kChat, kEmbeddings };
// "completions", "chat", "embeddings"; false if unknown.
bool ParseApi(std::string_view text, Api* out);
std::string_view ApiName(Api api);
// "/v1/completions", ...
std::string_view ApiPath(Api api);

struct ApiOptions {
  Api api = Api::kCompletions;
  bool stream = true;  // ignored for embeddings
  std::string model = "default";
  bool ignore_eos = true;    // ask vLLM / llama.cpp to produce exactly max_tokens
  double temperature = 0;    // greedy: repeatable output on a real engine
  std::string extra_fields;  // raw JSON members appended to every body: "\"top_k\":1"
};

// Checks --extra-body (`text`: JSON object members without the braces, e.g. "\"top_k\":1") and
// sets options->extra_fields to them: INVALID_ARGUMENT, naming the flag and what to do, when
// they are not valid JSON members, give a key twice, or set a field titan load writes itself
// (model, prompt, max_tokens, stream, ...: each has its flag). "temperature" sets
// options->temperature (titan load writes 0 by default).
Status SetExtraFields(std::string_view text, ApiOptions* options);

// The request body for one request. `prompt` is used for completions and embeddings, and as the
// single user message for chat when `messages` is empty.
std::string BuildRequestBody(const ApiOptions& options, std::string_view prompt,
                             const std::vector<ChatMessage>& messages, int64_t max_tokens);

// What one response (or one streamed chunk) said.
struct ResponseInfo {
  bool has_content = false;    // a non-empty text / delta.content / reasoning_content
  int64_t prompt_tokens = -1;  // usage, when present
  int64_t completion_tokens = -1;
  double server_prompt_ms = -1;  // llama.cpp timings, when present
  double server_predicted_ms = -1;
  double server_predicted_per_token_ms = -1;
  int32_t server_cache_tokens = -1;
  int64_t embeddings = 0;  // embeddings: vectors returned
};

class ResponseParser {
 public:
  // Parses one SSE event's data (a chunk) or a whole non-streamed body. INVALID_ARGUMENT when
  // it is not a JSON object (the message says what was seen); DATA_LOSS for an API error object
  // in a 2xx answer.
  Status Parse(std::string_view json, Api api, ResponseInfo* info);

 private:
  simdjson::dom::parser parser_;
};

}  // namespace titan::load
