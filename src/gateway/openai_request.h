// The gateway's parser of client request bodies: what routing, admission, session affinity,
// prefix hashing and dynamic batching need to know about an OpenAI-compatible request, without
// changing it (the gateway forwards the client's bytes). Fuzzed by openai_request_fuzzer.cc.
//
// JSON is parsed by simdjson (which validates UTF-8) with a nesting bound (RequestLimits::
// max_depth). Unknown fields are ignored (clients send temperature, top_p, tools, ...), and so
// are fields only the upstream can judge (roles, image parts, sampling values); fields whose
// value is JSON null count as absent. Every error is INVALID_ARGUMENT with a message that names
// the field and what is allowed, and `*param` (when not null) is set to the field's name ("" for
// a body that is not a JSON object at all): the HTTP layer answers 400 with both, as OpenAI does.
// Sizes are not limited here beyond RequestLimits (the gateway bounds the body size before).
//
// Thread safety: pure functions (each thread keeps its own simdjson parser, which keeps the
// capacity of the largest body it has seen).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "src/base/status.h"

namespace titan::gateway {

enum class Endpoint { kCompletions, kChatCompletions, kEmbeddings, kOther };

// "/v1/completions", "/v1/chat/completions", "/v1/embeddings" (exactly; a "?query" suffix is
// ignored); any other path is kOther.
Endpoint EndpointForPath(std::string_view path);
// "completions", "chat", "embeddings", "other": for logs and metric labels.
std::string_view EndpointName(Endpoint endpoint);

struct RequestLimits {
  // Nesting of arrays and objects, the body's own object counting 1 ({"a":[1]} is 2 deep; an
  // empty [] or {} adds no level, as simdjson counts). 0 counts as 1.
  size_t max_depth = 32;
  // Prompts in one completions request, inputs in one embeddings request.
  size_t max_inputs = 2048;
};

struct RequestInfo {
  Endpoint endpoint = Endpoint::kOther;
  std::string model;  // "" when absent
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // max_tokens, or for chat max_completion_tokens (which wins when both are given); -1 when
  // absent. Non-negative otherwise.
  int64_t max_tokens = -1;
  int64_t n = 1;     // >= 1
  std::string user;  // the "user" field ("" when absent): the session-affinity key
  // The prompt text in order, for prefix hashing and length estimates (bytes, UTF-8):
  //  - completions: the prompt string, or the strings of a prompt list joined by "\n";
  //  - chat: every message's content (a string, or each {"type":"text"} part's text) joined by
  //    "\n"; other parts (images, audio) contribute nothing;
  //  - embeddings: the input string, or the strings of an input list joined by "\n".
  std::string prompt_text;
  // When the prompt/input is given as token ids (a list of integers, or a list of such lists):
  // the number of ids in all; prompt_text is then "".
  int64_t prompt_token_ids = 0;
  // Number of prompts (completions) or inputs (embeddings): the list's length when the
  // prompt/input is a list of strings or of token-id lists, else 1 (also for chat).
  size_t inputs = 1;
  // The prompt/input was a JSON list of strings or of token-id lists (several prompts: an
  // upstream batch already). A single token-id list (one prompt) is not.
  bool prompt_is_list = false;
};

// Parses a client's request body for `endpoint`:
//  - every endpoint: "model" string, "stream" bool, "stream_options" object with
//    "include_usage" bool, "max_tokens" non-negative integer (integral floats such as 16.0
//    pass), "n" integer >= 1, "user" string;
//  - completions: "prompt" (required) is a string, a non-empty list of strings, a list of token
//    ids (non-negative integers) or a non-empty list of token-id lists;
//  - chat: "messages" (required) is a non-empty list of objects whose "content" is a string, a
//    list of parts (objects; {"type":"text","text":string} ones are read) or null;
//    "max_completion_tokens" as max_tokens;
//  - embeddings: "input" (required), the same forms as a completions prompt;
//  - lists of prompts/inputs hold at most limits.max_inputs items;
//  - kOther never fails: the upstream judges the body (it may not even be JSON, e.g. a
//    multipart upload); when the body is a JSON object, "model" and "stream" are read (values of
//    other types are ignored), everything else keeps its default. An empty body is fine.
// Errors (known endpoints): INVALID_ARGUMENT, e.g. "body is not valid JSON: <simdjson's reason>
// (send a JSON object)", "body is not valid UTF-8", "body is nested deeper than 32 levels",
// "body must be a JSON object, got an array", "max_tokens must be a non-negative integer, got
// -3", "n must be an integer >= 1, got 0", "messages must be a non-empty list", "prompt is
// required", "input is required"; `*param` (if non-null) gets the field's name ("" for the body
// as a whole, "stream_options.include_usage", "messages[2].content" for nested ones).
Result<RequestInfo> InspectRequest(Endpoint endpoint, std::string_view body,
                                   const RequestLimits& limits, std::string* param);

// What a JSON value was, for "got ..." in error messages: scalars as their JSON text (cut at
// 40 bytes on a UTF-8 character boundary, then "..."), containers as "a list" / "an object".
std::string DescribeJsonValue(simdjson::dom::element value);

}  // namespace titan::gateway
