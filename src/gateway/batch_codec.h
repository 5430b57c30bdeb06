// Triton-style dynamic batching of /v1/embeddings and non-streaming /v1/completions: requests
// that differ only in their prompt are merged into one upstream request whose prompt/input is
// the list of their prompts, and the upstream's answer is split back into one answer per
// request, each as that request would have got alone. Fuzzed by batch_codec_fuzzer.cc.
//
// What upstreams answer to a list (checked against llama.cpp's llama-server, build 80fb11a,
// and the OpenAI API):
//  - /v1/embeddings, "input": [a, b]: one object
//      {"model":..,"object":"list","usage":{"prompt_tokens":9,"total_tokens":9},
//       "data":[{"embedding":[..],"index":0,"object":"embedding"},{..,"index":1,..}]}
//    with data[i].index = i and usage counting every input (3 + 6 tokens above).
//  - /v1/completions, "prompt": [a, b]: one object
//      {"choices":[{"text":..,"index":0,"logprobs":null,"finish_reason":"length"},
//                  {..,"index":1,..}],
//       "created":..,"model":..,"system_fingerprint":..,"object":"text_completion",
//       "usage":{"completion_tokens":3,"prompt_tokens":3,"total_tokens":6,
//                "prompt_tokens_details":{"cached_tokens":0}},"id":..,"timings":{..}}
//    llama-server builds it by appending every other prompt's choice to the first prompt's
//    answer, so id, timings and usage are the FIRST prompt's alone (above: 3 prompt tokens of
//    "hello world", not 3 + 6); the split usage then under-counts. OpenAI and vLLM count all.
//    Older llama-servers answered a JSON array of per-prompt answers instead ([{"choices":[
//    {"index":0,..}],"usage":..}, ..]); SplitResponse accepts that form too (element i is
//    member i's answer, passed through with its choice's index set to 0; usage exact).
//
// JSON is parsed by simdjson (UTF-8 validated, nesting of arrays and objects bounded by 64, the
// top-level value counting 1 and an empty [] or {} adding no level) and written back compact;
// numbers keep their value but not necessarily their spelling (1E2 becomes 100.0).
//
// Thread safety: pure functions (each thread keeps its own simdjson parser).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/gateway/openai_request.h"

namespace titan::gateway {

// A key equal for two requests iff they can share one upstream request: the endpoint's name,
// '\n', then every top-level field except the prompt ("prompt" for completions, "input" for
// embeddings) as canonical JSON (object keys sorted at every level, compact, numbers as
// simdjson writes them: 1 and 1.0 differ, so such requests are not batched together).
// nullopt when the request cannot be batched: an endpoint other than completions and
// embeddings, a body that is not a JSON object (nested deeper than 64, or with a key twice in an
// object), "stream" anything but absent/null/false, "n" anything but absent/null/1, a prompt/
// input that is missing, null, a list (already a batch) or token ids (anything but a string),
// or (completions) any of "echo", "logprobs", "best_of", "suffix" present and not null.
// The body's other values are not validated (InspectRequest does that before).
std::optional<std::string> BatchKey(Endpoint endpoint, std::string_view body);

// One upstream body: the first body's fields, in its order, with "prompt"/"input" replaced by
// the list of every body's prompt string, in the order of `bodies` (a list of one for one body).
// Errors: INVALID_ARGUMENT when `bodies` is empty, or a body has no BatchKey or another key than
// the first's (precondition: all share one BatchKey).
Result<std::string> MergeBodies(Endpoint endpoint, const std::vector<std::string_view>& bodies);

// Splits the upstream answer to a merged request of `count` = prompt_bytes.size() members back
// into `count` answers, in member order, each as the member would have got alone:
//  - embeddings: data[i] (the item whose "index" is i; items without "index" count by position)
//    as the only item, with "index":0;
//  - completions: the choice with "index" i (likewise) as the only choice, renamed to index 0;
//    the array form (see above) is also accepted;
//  - other top-level fields (id, object, created, model, ...) copied as they are;
//  - "usage" (when the answer has one; it must be an object of non-negative integers): split so
//    that prompt_tokens sum to the total, apportioned by each member's prompt length in bytes
//    (`prompt_bytes`; floor of the share, the remainder to the last member; equal shares when
//    all lengths are 0); completion_tokens (completions) from each choice when every choice
//    carries "usage":{"completion_tokens":N}, else apportioned equally (remainder to the last);
//    total_tokens = prompt + completion. Other usage fields (prompt_tokens_details) are dropped:
//    they cannot be split.
// Errors: INVALID_ARGUMENT for count 0 or an endpoint other than completions and embeddings;
// DATA_LOSS, naming what is wrong, for an answer that is not JSON, not an object (or, for
// completions, an array of objects), nested deeper than 64, without its data/choices list, with
// another number of items than count, an index out of range, repeated or not an integer, or a
// malformed usage.
Result<std::vector<std::string>> SplitResponse(Endpoint endpoint, std::string_view upstream_body,
                                               const std::vector<size_t>& prompt_bytes);

}  // namespace titan::gateway
