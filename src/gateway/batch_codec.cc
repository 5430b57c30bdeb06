#include "src/gateway/batch_codec.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include <fmt/format.h>
#include <simdjson.h>

#include "src/base/text.h"
#include "src/gateway/openai_request.h"

namespace titan::gateway {
namespace {

namespace dom = simdjson::dom;

constexpr size_t kMaxDepth = 64;

// The top-level value of `body`, parsed by this thread's parser: valid until its next parse.
simdjson::error_code Parse(std::string_view body, dom::element* out) {
  thread_local dom::parser parser;
  thread_local bool allocated = false;
  if (!allocated) {
    // simdjson counts one level more than the containers it allows.
    if (parser.allocate(64 << 10, kMaxDepth + 1) != simdjson::SUCCESS) return simdjson::MEMALLOC;
    allocated = true;
  }
  return parser.parse(body.data(), body.size(), true).get(*out);
}

std::string_view PromptKey(Endpoint endpoint) {
  return endpoint == Endpoint::kEmbeddings ? "input" : "prompt";
}

bool Batchable(Endpoint endpoint) {
  return endpoint == Endpoint::kCompletions || endpoint == Endpoint::kEmbeddings;
}

void AppendValue(std::string* out, dom::element value) { out->append(simdjson::minify(value)); }

void AppendKey(std::string* out, std::string_view key) {
  AppendJsonString(key, out);
  out->push_back(':');
}

// Canonical JSON of `value`: object keys sorted (bytewise) at every level, compact. False when an
// object has a key twice (no canonical form that every upstream would read alike).
bool AppendCanonical(std::string* out, dom::element value, std::string_view skip_key = {}) {
  dom::object object;
  dom::array array;
  if (value.get_object().get(object) == simdjson::SUCCESS) {
    std::vector<std::pair<std::string_view, dom::element>> fields;
    for (dom::key_value_pair field : object) fields.emplace_back(field.key, field.value);
    std::sort(fields.begin(), fields.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    out->push_back('{');
    bool first = true;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i > 0 && fields[i].first == fields[i - 1].first) return false;
      if (!skip_key.empty() && fields[i].first == skip_key) continue;
      if (!first) out->push_back(',');
      first = false;
      AppendKey(out, fields[i].first);
      if (!AppendCanonical(out, fields[i].second)) return false;
    }
    out->push_back('}');
    return true;
  }
  if (value.get_array().get(array) == simdjson::SUCCESS) {
    out->push_back('[');
    bool first = true;
    for (dom::element item : array) {
      if (!first) out->push_back(',');
      first = false;
      if (!AppendCanonical(out, item)) return false;
    }
    out->push_back(']');
    return true;
  }
  AppendValue(out, value);
  return true;
}

bool PresentNotNull(dom::object object, std::string_view key, dom::element* value) {
  return object.at_key(key).get(*value) == simdjson::SUCCESS && !value->is_null();
}

struct Member {
  std::string key;
  std::string prompt;  // as a JSON string
};

// The batch key and prompt of one body (see BatchKey).
std::optional<Member> Analyze(Endpoint endpoint, std::string_view body) {
  if (!Batchable(endpoint)) return std::nullopt;
  dom::element doc;
  dom::object object;
  if (Parse(body, &doc) != simdjson::SUCCESS || doc.get_object().get(object) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  dom::element value;
  bool stream = false;
  if (PresentNotNull(object, "stream", &value) &&
      (value.get_bool().get(stream) != simdjson::SUCCESS || stream)) {
    return std::nullopt;
  }
  int64_t n = 0;
  if (PresentNotNull(object, "n", &value) &&
      (value.get_int64().get(n) != simdjson::SUCCESS || n != 1)) {
    return std::nullopt;
  }
  if (endpoint == Endpoint::kCompletions) {
    for (std::string_view key : {"echo", "logprobs", "best_of", "suffix"}) {
      if (PresentNotNull(object, key, &value)) return std::nullopt;
    }
  }
  std::string_view prompt;
  if (object.at_key(PromptKey(endpoint)).get_string().get(prompt) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  Member member;
  member.key.append(EndpointName(endpoint));
  member.key.push_back('\n');
  if (!AppendCanonical(&member.key, doc, PromptKey(endpoint))) return std::nullopt;
  AppendJsonString(prompt, &member.prompt);
  return member;
}

Status Corrupt(std::string message) { return DataLossError(std::move(message)); }

Status ParseError(simdjson::error_code error) {
  switch (error) {
    case simdjson::UTF8_ERROR:
      return Corrupt("the upstream answer is not valid UTF-8");
    case simdjson::DEPTH_ERROR:
      return Corrupt(fmt::format("the upstream answer is nested deeper than {} levels", kMaxDepth));
    case simdjson::MEMALLOC:
      return ResourceExhaustedError("cannot allocate the JSON parser");
    default:
      return Corrupt(
          fmt::format("the upstream answer is not valid JSON: {}", simdjson::error_message(error)));
  }
}

// `item` (an object) with "index":0 in place of its index (appended when it has none).
void AppendItemAtZero(std::string* out, dom::object item) {
  out->push_back('{');
  bool first = true;
  bool indexed = false;
  for (dom::key_value_pair field : item) {
    if (field.key == "index") {
      if (indexed) continue;
      indexed = true;
    }
    if (!first) out->push_back(',');
    first = false;
    AppendKey(out, field.key);
    if (field.key == "index") {
      out->push_back('0');
    } else {
      AppendValue(out, field.value);
    }
  }
  if (!indexed) out->append(first ? "\"index\":0" : ",\"index\":0");
  out->push_back('}');
}

// A usage count: absent or null is 0.
Status GetCount(dom::object usage, std::string_view key, std::string_view where, int64_t* out) {
  *out = 0;
  dom::element value;
  if (!PresentNotNull(usage, key, &value)) return OkStatus();
  if (value.get_int64().get(*out) != simdjson::SUCCESS || *out < 0) {
    return Corrupt(fmt::format("{}.{} is {}; expected a non-negative integer", where, key,
                               DescribeJsonValue(value)));
  }
  return OkStatus();
}

// `total` shared in proportion to `weights` (floor), the remainder to the last; equal shares
// when the weights sum to 0.
std::vector<int64_t> Apportion(int64_t total, const std::vector<size_t>& weights) {
  const size_t count = weights.size();
  std::vector<int64_t> shares(count, 0);
  unsigned __int128 sum = 0;
  for (size_t w : weights) sum += w;
  int64_t given = 0;
  for (size_t i = 0; i + 1 < count; ++i) {
    shares[i] =
        sum == 0 ? total / static_cast<int64_t>(count)
                 : static_cast<int64_t>(static_cast<unsigned __int128>(total) * weights[i] / sum);
    given += shares[i];
  }
  shares[count - 1] = total - given;
  return shares;
}

// The array form of a completions answer (older llama-servers): element i is member i's answer.
Result<std::vector<std::string>> SplitArray(dom::array answers, size_t count) {
  if (answers.size() != count) {
    return Corrupt(fmt::format("the upstream answer is a list of {} answers for {} requests",
                               answers.size(), count));
  }
  std::vector<std::string> out;
  out.reserve(count);
  size_t position = 0;
  for (dom::element element : answers) {
    dom::object answer;
    if (element.get_object().get(answer) != simdjson::SUCCESS) {
      return Corrupt(fmt::format("the upstream answer's item {} is not an object", position));
    }
    dom::array choices;
    if (answer.at_key("choices").get_array().get(choices) != simdjson::SUCCESS) {
      return Corrupt(
          fmt::format("the upstream answer's item {} has no \"choices\" list", position));
    }
    dom::object choice;
    if (choices.size() != 1 || choices.at(0).get_object().get(choice) != simdjson::SUCCESS) {
      return Corrupt(
          fmt::format("the upstream answer's item {} has {} choices; expected one object", position,
                      choices.size()));
    }
    std::string text = "{";
    bool first = true;
    bool listed = false;
    for (dom::key_value_pair field : answer) {
      if (field.key == "choices") {
        if (listed) continue;
        listed = true;
      }
      if (!first) text.push_back(',');
      first = false;
      AppendKey(&text, field.key);
      if (field.key == "choices") {
        text.push_back('[');
        AppendItemAtZero(&text, choice);
        text.push_back(']');
      } else {
        AppendValue(&text, field.value);
      }
    }
    text.push_back('}');
    out.push_back(std::move(text));
    ++position;
  }
  return out;
}

}  // namespace

std::optional<std::string> BatchKey(Endpoint endpoint, std::string_view body) {
  std::optional<Member> member = Analyze(endpoint, body);
  if (!member) return std::nullopt;
  return std::move(member->key);
}

Result<std::string> MergeBodies(Endpoint endpoint, const std::vector<std::string_view>& bodies) {
  if (bodies.empty()) return InvalidArgumentError("no request bodies to merge");
  std::vector<std::string> prompts;
  prompts.reserve(bodies.size());
  std::string key;
  for (size_t i = 0; i < bodies.size(); ++i) {
    std::optional<Member> member = Analyze(endpoint, bodies[i]);
    if (!member) {
      return InvalidArgumentError(
          fmt::format("request {} of {} cannot be batched for /v1/{} (see BatchKey)", i,
                      bodies.size(), EndpointName(endpoint)));
    }
    if (i == 0) {
      key = std::move(member->key);
    } else if (member->key != key) {
      return InvalidArgumentError(fmt::format(
          "request {} differs from request 0 in more than its {}: they cannot share one "
          "upstream request",
          i, PromptKey(endpoint)));
    }
    prompts.push_back(std::move(member->prompt));
  }
  dom::element doc;
  dom::object object;
  if (Parse(bodies[0], &doc) != simdjson::SUCCESS ||
      doc.get_object().get(object) != simdjson::SUCCESS) {
    return InternalError("request 0 no longer parses");  // Analyze parsed it
  }
  const std::string_view prompt_key = PromptKey(endpoint);
  std::string out = "{";
  bool first = true;
  for (dom::key_value_pair field : object) {
    if (!first) out.push_back(',');
    first = false;
    AppendKey(&out, field.key);
    if (field.key == prompt_key) {  // once: Analyze rejects repeated keys
      out.push_back('[');
      for (size_t i = 0; i < prompts.size(); ++i) {
        if (i > 0) out.push_back(',');
        out.append(prompts[i]);
      }
      out.push_back(']');
    } else {
      AppendValue(&out, field.value);
    }
  }
  out.push_back('}');
  return out;
}

Result<std::vector<std::string>> SplitResponse(Endpoint endpoint, std::string_view upstream_body,
                                               const std::vector<size_t>& prompt_bytes) {
  const size_t count = prompt_bytes.size();
  if (count == 0) return InvalidArgumentError("SplitResponse needs at least one member");
  if (!Batchable(endpoint)) {
    return InvalidArgumentError(
        fmt::format("/v1/{} answers are not batched", EndpointName(endpoint)));
  }
  const bool completions = endpoint == Endpoint::kCompletions;
  dom::element doc;
  if (simdjson::error_code error = Parse(upstream_body, &doc); error != simdjson::SUCCESS) {
    return ParseError(error);
  }
  dom::array answers;
  if (completions && doc.get_array().get(answers) == simdjson::SUCCESS) {
    return SplitArray(answers, count);
  }
  dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) {
    return Corrupt(fmt::format("the upstream answer must be a JSON object{}, not {}",
                               completions ? " (or a list of them)" : "", DescribeJsonValue(doc)));
  }
  const std::string_view list_key = completions ? "choices" : "data";
  dom::array list;
  if (object.at_key(list_key).get_array().get(list) != simdjson::SUCCESS) {
    return Corrupt(fmt::format("the upstream answer has no \"{}\" list", list_key));
  }
  if (list.size() != count) {
    return Corrupt(fmt::format("the upstream answer has {} items in \"{}\" for {} requests",
                               list.size(), list_key, count));
  }
  // The items by index.
  std::vector<dom::object> items(count);
  std::vector<bool> seen(count, false);
  size_t position = 0;
  for (dom::element element : list) {
    dom::object item;
    if (element.get_object().get(item) != simdjson::SUCCESS) {
      return Corrupt(fmt::format("{}[{}] is not an object", list_key, position));
    }
    size_t index = position;
    dom::element value;
    if (PresentNotNull(item, "index", &value)) {
      int64_t i = 0;
      if (value.get_int64().get(i) != simdjson::SUCCESS || i < 0 ||
          static_cast<uint64_t>(i) >= count) {
        return Corrupt(fmt::format("{}[{}].index is {}; expected an integer in [0, {})", list_key,
                                   position, DescribeJsonValue(value), count));
      }
      index = static_cast<size_t>(i);
    }
    if (seen[index]) {
      return Corrupt(fmt::format("{}[{}].index {} is repeated", list_key, position, index));
    }
    seen[index] = true;
    items[index] = item;
    ++position;
  }
  // Usage.
  dom::element usage_value;
  const bool has_usage = PresentNotNull(object, "usage", &usage_value);
  std::vector<int64_t> prompt_tokens, completion_tokens(count, 0);
  if (has_usage) {
    dom::object usage;
    if (usage_value.get_object().get(usage) != simdjson::SUCCESS) {
      return Corrupt("the upstream answer's usage is not an object");
    }
    int64_t prompt_total = 0, completion_total = 0;
    TITAN_RETURN_IF_ERROR(GetCount(usage, "prompt_tokens", "usage", &prompt_total));
    prompt_tokens = Apportion(prompt_total, prompt_bytes);
    if (completions) {
      TITAN_RETURN_IF_ERROR(GetCount(usage, "completion_tokens", "usage", &completion_total));
      bool per_choice = true;
      for (size_t i = 0; i < count && per_choice; ++i) {
        dom::object choice_usage;
        per_choice =
            items[i].at_key("usage").get_object().get(choice_usage) == simdjson::SUCCESS &&
            choice_usage.at_key("completion_tokens").get_int64().get(completion_tokens[i]) ==
                simdjson::SUCCESS &&
            completion_tokens[i] >= 0;
      }
      if (!per_choice) {
        completion_tokens = Apportion(completion_total, std::vector<size_t>(count, 1));
      }
    }
  }
  std::vector<std::string> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    std::string text = "{";
    bool first = true;
    bool listed = false;
    bool usage_written = false;
    for (dom::key_value_pair field : object) {
      const bool is_list = field.key == list_key;
      const bool is_usage = has_usage && field.key == "usage";
      if ((is_list && listed) || (is_usage && usage_written)) continue;
      if (!first) text.push_back(',');
      first = false;
      AppendKey(&text, field.key);
      if (is_list) {
        listed = true;
        text.push_back('[');
        AppendItemAtZero(&text, items[i]);
        text.push_back(']');
      } else if (is_usage) {
        usage_written = true;
        int64_t total = 0;
        if (__builtin_add_overflow(prompt_tokens[i], completion_tokens[i], &total)) {
          return Corrupt("the upstream answer's usage counts are out of range");
        }
        if (completions) {
          text.append(
              fmt::format("{{\"completion_tokens\":{},\"prompt_tokens\":{},\"total_tokens\":{}}}",
                          completion_tokens[i], prompt_tokens[i], total));
        } else {
          text.append(
              fmt::format("{{\"prompt_tokens\":{},\"total_tokens\":{}}}", prompt_tokens[i], total));
        }
      } else {
        AppendValue(&text, field.value);
      }
    }
    text.push_back('}');
    out.push_back(std::move(text));
  }
  return out;
}

}  // namespace titan::gateway
