// Fuzzes dynamic batching's codec. Upstream answers are outside input: SplitResponse must never
// crash, and what it returns must be `count` JSON objects with one item each. Client bodies are
// too: BatchKey/MergeBodies must agree (equal keys merge, the merged body lists every prompt) and
// a merged request's answer must split back.
//
// Input: byte 0 picks the mode and the endpoint; mode split: byte 1 gives the member count
// (1..8) and bytes 2.. their prompt lengths, then the answer; mode merge: bodies separated by
// 0xFF (a byte no UTF-8 text holds).
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/gateway/batch_codec.h"
#include "src/gateway/openai_request.h"

using namespace titan::gateway;
namespace dom = simdjson::dom;

namespace {

// The output's single item (data or choices), checked to have index 0; its usage if any.
void CheckAnswer(const std::string& text, Endpoint endpoint, int64_t* prompt_tokens) {
  static dom::parser parser;  // a fuzzer runs on one thread
  dom::element doc;
  dom::object object;
  if (parser.parse(text).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(object) != simdjson::SUCCESS) {
    __builtin_trap();
  }
  dom::array list;
  const char* key = endpoint == Endpoint::kEmbeddings ? "data" : "choices";
  if (object.at_key(key).get_array().get(list) != simdjson::SUCCESS || list.size() != 1) {
    __builtin_trap();
  }
  int64_t index = -1;
  if (list.at(0).at_key("index").get_int64().get(index) != simdjson::SUCCESS || index != 0) {
    __builtin_trap();
  }
  *prompt_tokens = -1;
  dom::object usage;
  if (object.at_key("usage").get_object().get(usage) == simdjson::SUCCESS) {
    int64_t p = 0, c = 0, t = 0;
    if (usage.at_key("prompt_tokens").get_int64().get(p) == simdjson::SUCCESS &&
        usage.at_key("total_tokens").get_int64().get(t) == simdjson::SUCCESS) {
      (void)usage.at_key("completion_tokens").get_int64().get(c);
      *prompt_tokens = p;
      if (p < 0 || c < 0 || t != p + c) *prompt_tokens = -2;  // checked by the caller
    }
  }
}

void FuzzSplit(Endpoint endpoint, std::string_view input) {
  if (input.empty()) return;
  const size_t count = 1 + static_cast<uint8_t>(input[0]) % 8;
  input.remove_prefix(1);
  std::vector<size_t> prompt_bytes(count, 0);
  for (size_t i = 0; i < count && !input.empty(); ++i) {
    prompt_bytes[i] = static_cast<uint8_t>(input[0]);
    input.remove_prefix(1);
  }
  titan::Result<std::vector<std::string>> r = SplitResponse(endpoint, input, prompt_bytes);
  if (!r.ok()) {
    if (r.status().code() != titan::StatusCode::kDataLoss || r.status().message().empty()) {
      __builtin_trap();
    }
    return;
  }
  if (r->size() != count) __builtin_trap();
  const bool array_form = input.find_first_not_of(" \t\r\n") != std::string_view::npos &&
                          input[input.find_first_not_of(" \t\r\n")] == '[';
  for (const std::string& answer : *r) {
    int64_t prompt_tokens = 0;
    CheckAnswer(answer, endpoint, &prompt_tokens);
    if (!array_form && prompt_tokens == -2) __builtin_trap();  // we wrote that usage
  }
}

void FuzzMerge(Endpoint endpoint, std::string_view input) {
  std::vector<std::string_view> bodies;
  while (true) {
    const size_t cut = input.find('\xff');
    bodies.push_back(input.substr(0, cut));
    if (cut == std::string_view::npos || bodies.size() == 16) break;
    input.remove_prefix(cut + 1);
  }
  std::vector<std::optional<std::string>> keys;
  bool same = true;
  for (std::string_view body : bodies) {
    keys.push_back(BatchKey(endpoint, body));
    if (!keys.back() || *keys.back() != *keys.front()) same = false;
  }
  titan::Result<std::string> merged = MergeBodies(endpoint, bodies);
  if (merged.ok() != same) __builtin_trap();
  if (!merged.ok()) {
    if (merged.status().code() != titan::StatusCode::kInvalidArgument) __builtin_trap();
    return;
  }
  if (BatchKey(endpoint, *merged)) __builtin_trap();  // a list: a batch already
  // The merged body lists every prompt; it is as valid as the first body.
  std::vector<size_t> prompt_bytes;
  std::string joined;
  bool all_valid = true;
  for (size_t i = 0; i < bodies.size(); ++i) {
    titan::Result<RequestInfo> info = InspectRequest(endpoint, bodies[i], {}, nullptr);
    all_valid = all_valid && info.ok();
    prompt_bytes.push_back(info.ok() ? info->prompt_text.size() : 0);
    if (info.ok()) joined += (i > 0 ? "\n" : "") + info->prompt_text;
  }
  titan::Result<RequestInfo> info = InspectRequest(endpoint, *merged, {}, nullptr);
  if (all_valid) {
    if (!info.ok() || !info->prompt_is_list || info->inputs != bodies.size() ||
        info->prompt_text != joined) {
      __builtin_trap();
    }
  }
  // An upstream's answer, items in reverse order, splits back into one answer per member.
  const size_t count = bodies.size();
  std::string answer = endpoint == Endpoint::kEmbeddings
                           ? R"({"object":"list","data":[)"
                           : R"({"object":"text_completion","choices":[)";
  for (size_t i = count; i-- > 0;) {
    answer += "{\"index\":" + std::to_string(i) + "}";
    if (i > 0) answer += ",";
  }
  answer += R"(],"usage":{"prompt_tokens":1000,"completion_tokens":7}})";
  titan::Result<std::vector<std::string>> split = SplitResponse(endpoint, answer, prompt_bytes);
  if (!split.ok() || split->size() != count) __builtin_trap();
  int64_t sum = 0;
  for (const std::string& a : *split) {
    int64_t prompt_tokens = 0;
    CheckAnswer(a, endpoint, &prompt_tokens);
    if (prompt_tokens < 0) __builtin_trap();
    sum += prompt_tokens;
  }
  if (sum != 1000) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Endpoint endpoint = (data[0] & 2) ? Endpoint::kEmbeddings : Endpoint::kCompletions;
  if (data[0] & 1) {
    FuzzMerge(endpoint, input);
  } else {
    FuzzSplit(endpoint, input);
  }
  return 0;
}
