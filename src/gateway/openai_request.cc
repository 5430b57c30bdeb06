#include "src/gateway/openai_request.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_set>

#include <fmt/format.h>
#include <simdjson.h>

namespace titan::gateway {
namespace {

namespace dom = simdjson::dom;

Status Error(std::string* param, std::string_view field, std::string message) {
  if (param) *param = std::string(field);
  return InvalidArgumentError(std::move(message));
}

// The top-level value of `body`, parsed by this thread's parser: valid until its next parse.
simdjson::error_code Parse(std::string_view body, size_t max_depth, dom::element* out) {
  thread_local dom::parser parser;
  thread_local size_t allocated_depth = 0;
  // simdjson counts one level more than the containers it allows.
  const size_t depth = std::max<size_t>(max_depth, 1) + 1;
  if (allocated_depth != depth) {
    if (parser.allocate(64 << 10, depth) != simdjson::SUCCESS) return simdjson::MEMALLOC;
    allocated_depth = depth;
  }
  return parser.parse(body.data(), body.size(), true).get(*out);
}

// Whether an object anywhere in `value` gives a key twice; if so, *path is that key's path
// below `value` (".max_tokens", ".messages[0].content"), built only then, so a clean body costs
// no string. titan reads the first of two equal keys and vLLM and llama.cpp the last, so a limit
// checked here would not hold upstream. Linear in the document; recursion is bounded by the
// parser's depth limit.
bool FindDuplicateKey(dom::element value, std::string* path) {
  if (dom::object object; value.get_object().get(object) == simdjson::SUCCESS) {
    std::unordered_set<std::string_view> keys;
    for (dom::key_value_pair field : object) {
      if (!keys.insert(field.key).second || FindDuplicateKey(field.value, path)) {
        *path = fmt::format(".{}{}", field.key, *path);
        return true;
      }
    }
  } else if (dom::array array; value.get_array().get(array) == simdjson::SUCCESS) {
    size_t index = 0;
    for (dom::element item : array) {
      if (FindDuplicateKey(item, path)) {
        *path = fmt::format("[{}]{}", index, *path);
        return true;
      }
      ++index;
    }
  }
  return false;
}

// The field's value, or nullopt when absent or null.
std::optional<dom::element> Field(dom::object object, std::string_view key) {
  dom::element value;
  if (object.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
  return value;
}

Status GetString(dom::object object, std::string_view key, std::string* param, std::string* out) {
  auto value = Field(object, key);
  if (!value) return OkStatus();
  std::string_view text;
  if (value->get_string().get(text) != simdjson::SUCCESS) {
    return Error(param, key,
                 fmt::format("{} must be a string, got {}", key, DescribeJsonValue(*value)));
  }
  *out = std::string(text);
  return OkStatus();
}

Status GetBool(dom::object object, std::string_view key, std::string_view name, std::string* param,
               bool* out) {
  auto value = Field(object, key);
  if (!value) return OkStatus();
  if (value->get_bool().get(*out) != simdjson::SUCCESS) {
    return Error(param, name,
                 fmt::format("{} must be true or false, got {}", name, DescribeJsonValue(*value)));
  }
  return OkStatus();
}

// An integer (also an integral float such as 16.0) that is >= lo; `want` says so in messages.
Status GetInteger(dom::object object, std::string_view key, int64_t lo, std::string_view want,
                  std::string* param, std::optional<int64_t>* out) {
  auto value = Field(object, key);
  if (!value) return OkStatus();
  bool ok = false;
  int64_t n = 0;
  switch (value->type()) {
    case dom::element_type::INT64:
      n = value->get_int64().value_unsafe();
      ok = true;
      break;
    case dom::element_type::DOUBLE: {
      const double d = value->get_double().value_unsafe();
      if (d == std::floor(d) && d >= -9.2e18 && d <= 9.2e18) {
        n = static_cast<int64_t>(d);
        ok = true;
      }
      break;
    }
    default:  // UINT64 (above INT64_MAX), strings, lists, ...
      break;
  }
  if (!ok || n < lo) {
    return Error(param, key,
                 fmt::format("{} must be {}, got {}", key, want, DescribeJsonValue(*value)));
  }
  *out = n;
  return OkStatus();
}

bool IsTokenId(dom::element value) {
  int64_t id = 0;
  return value.get_int64().get(id) == simdjson::SUCCESS && id >= 0;
}

// "prompt" (completions) or "input" (embeddings): a string, a non-empty list of strings, a list
// of token ids, or a non-empty list of token-id lists.
Status GetPrompt(dom::object object, std::string_view key, const RequestLimits& limits,
                 std::string* param, RequestInfo* info) {
  auto value = Field(object, key);
  if (!value) return Error(param, key, fmt::format("{} is required", key));
  const std::string forms = fmt::format(
      "{} must be a string, a non-empty list of strings, a list of token ids (non-negative "
      "integers) or a non-empty list of token-id lists",
      key);
  std::string_view text;
  if (value->get_string().get(text) == simdjson::SUCCESS) {
    info->prompt_text = std::string(text);
    return OkStatus();
  }
  dom::array list;
  if (value->get_array().get(list) != simdjson::SUCCESS) {
    return Error(param, key, fmt::format("{}, got {}", forms, DescribeJsonValue(*value)));
  }
  const size_t size = list.size();
  if (size == 0) return Error(param, key, fmt::format("{}, got an empty list", forms));
  dom::element first = list.at(0).value_unsafe();
  if (IsTokenId(first)) {  // one prompt of token ids
    size_t index = 0;
    for (dom::element id : list) {
      if (!IsTokenId(id)) {
        return Error(param, key,
                     fmt::format("{}[{}] must be a token id (a non-negative integer) like the "
                                 "first item, got {}",
                                 key, index, DescribeJsonValue(id)));
      }
      ++index;
    }
    info->prompt_token_ids = static_cast<int64_t>(size);
    return OkStatus();
  }
  if (size > limits.max_inputs) {
    return Error(param, key,
                 fmt::format("{} is a list of {} items; at most {} per request", key, size,
                             limits.max_inputs));
  }
  info->prompt_is_list = true;
  info->inputs = size;
  const bool strings = first.is_string();
  if (!strings && !first.is_array()) {
    return Error(param, key, fmt::format("{}, got a list of {}", forms, DescribeJsonValue(first)));
  }
  size_t index = 0;
  for (dom::element item : list) {
    if (strings) {
      if (item.get_string().get(text) != simdjson::SUCCESS) {
        return Error(param, key,
                     fmt::format("{}[{}] must be a string like the first item, got {}", key, index,
                                 DescribeJsonValue(item)));
      }
      if (index > 0) info->prompt_text.push_back('\n');
      info->prompt_text.append(text);
    } else {
      dom::array ids;
      if (item.get_array().get(ids) != simdjson::SUCCESS) {
        return Error(param, key,
                     fmt::format("{}[{}] must be a list of token ids like the first item, got {}",
                                 key, index, DescribeJsonValue(item)));
      }
      for (dom::element id : ids) {
        if (!IsTokenId(id)) {
          return Error(param, key,
                       fmt::format("{}[{}] must hold token ids (non-negative integers), got {}",
                                   key, index, DescribeJsonValue(id)));
        }
      }
      info->prompt_token_ids += static_cast<int64_t>(ids.size());
    }
    ++index;
  }
  return OkStatus();
}

// "messages": the text of every content joined by "\n".
Status GetMessages(dom::object object, std::string* param, RequestInfo* info) {
  constexpr std::string_view kWant = "messages must be a non-empty list";
  auto value = Field(object, "messages");
  if (!value) return Error(param, "messages", fmt::format("{} (it is required)", kWant));
  dom::array list;
  if (value->get_array().get(list) != simdjson::SUCCESS) {
    return Error(param, "messages",
                 fmt::format("{} of objects, got {}", kWant, DescribeJsonValue(*value)));
  }
  if (list.size() == 0) return Error(param, "messages", fmt::format("{}, got []", kWant));
  bool any_text = false;
  auto add = [&](std::string_view text) {
    if (any_text) info->prompt_text.push_back('\n');
    info->prompt_text.append(text);
    any_text = true;
  };
  size_t index = 0;
  for (dom::element message : list) {
    const std::string field = fmt::format("messages[{}]", index++);
    dom::object m;
    if (message.get_object().get(m) != simdjson::SUCCESS) {
      return Error(param, field,
                   fmt::format("{} must be an object with \"role\" and \"content\", got {}", field,
                               DescribeJsonValue(message)));
    }
    auto content = Field(m, "content");
    if (!content) continue;
    std::string_view text;
    dom::array parts;
    if (content->get_string().get(text) == simdjson::SUCCESS) {
      add(text);
    } else if (content->get_array().get(parts) == simdjson::SUCCESS) {
      size_t part_index = 0;
      for (dom::element part : parts) {
        dom::object p;
        if (part.get_object().get(p) != simdjson::SUCCESS) {
          return Error(param, field + ".content",
                       fmt::format("{}.content[{}] must be an object such as "
                                   "{{\"type\":\"text\",\"text\":\"...\"}}, got {}",
                                   field, part_index, DescribeJsonValue(part)));
        }
        std::string_view type;
        if (p.at_key("type").get_string().get(type) == simdjson::SUCCESS && type == "text") {
          auto part_text = Field(p, "text");
          if (!part_text || part_text->get_string().get(text) != simdjson::SUCCESS) {
            return Error(
                param, field + ".content",
                fmt::format("{}.content[{}].text must be a string, got {}", field, part_index,
                            part_text ? DescribeJsonValue(*part_text) : std::string("nothing")));
          }
          add(text);
        }
        ++part_index;
      }
    } else {
      return Error(param, field + ".content",
                   fmt::format("{}.content must be a string, a list of parts or null, got {}",
                               field, DescribeJsonValue(*content)));
    }
  }
  return OkStatus();
}

// kOther: model and stream when the body is a JSON object; never an error.
RequestInfo InspectOther(std::string_view body, const RequestLimits& limits) {
  RequestInfo info;
  info.endpoint = Endpoint::kOther;
  dom::element doc;
  dom::object object;
  if (Parse(body, limits.max_depth, &doc) != simdjson::SUCCESS ||
      doc.get_object().get(object) != simdjson::SUCCESS) {
    return info;
  }
  std::string_view model;
  if (auto value = Field(object, "model");
      value && value->get_string().get(model) == simdjson::SUCCESS) {
    info.model = std::string(model);
  }
  bool stream = false;
  if (auto value = Field(object, "stream");
      value && value->get_bool().get(stream) == simdjson::SUCCESS) {
    info.stream = stream;
  }
  return info;
}

}  // namespace

// What a value was, for "got ..." in messages: scalars as their JSON text (cut at 40 bytes, on a
// UTF-8 character boundary), containers by kind.
std::string DescribeJsonValue(simdjson::dom::element value) {
  namespace dom = simdjson::dom;
  switch (value.type()) {
    case dom::element_type::ARRAY:
      return "a list";
    case dom::element_type::OBJECT:
      return "an object";
    default:
      break;
  }
  std::string text = simdjson::minify(value);
  constexpr size_t kMax = 40;
  if (text.size() > kMax) {
    size_t cut = kMax;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
    text += "...";
  }
  return text;
}

Endpoint EndpointForPath(std::string_view path) {
  path = path.substr(0, path.find('?'));
  if (path == "/v1/completions") return Endpoint::kCompletions;
  if (path == "/v1/chat/completions") return Endpoint::kChatCompletions;
  if (path == "/v1/embeddings") return Endpoint::kEmbeddings;
  return Endpoint::kOther;
}

std::string_view EndpointName(Endpoint endpoint) {
  switch (endpoint) {
    case Endpoint::kCompletions:
      return "completions";
    case Endpoint::kChatCompletions:
      return "chat";
    case Endpoint::kEmbeddings:
      return "embeddings";
    case Endpoint::kOther:
      break;
  }
  return "other";
}

Result<RequestInfo> InspectRequest(Endpoint endpoint, std::string_view body,
                                   const RequestLimits& limits, std::string* param) {
  if (endpoint == Endpoint::kOther) return InspectOther(body, limits);
  dom::element doc;
  const simdjson::error_code error = Parse(body, limits.max_depth, &doc);
  switch (error) {
    case simdjson::SUCCESS:
      break;
    case simdjson::UTF8_ERROR:
      return Error(param, "", "body is not valid UTF-8");
    case simdjson::DEPTH_ERROR:
      return Error(param, "",
                   fmt::format("body is nested deeper than {} levels",
                               std::max<size_t>(limits.max_depth, 1)));
    case simdjson::MEMALLOC:
      return ResourceExhaustedError("cannot allocate the JSON parser");
    default:
      return Error(param, "",
                   fmt::format("body is not valid JSON: {} (send a JSON object)",
                               simdjson::error_message(error)));
  }
  dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) {
    return Error(param, "",
                 fmt::format("body must be a JSON object, got {}", DescribeJsonValue(doc)));
  }
  if (std::string duplicate; FindDuplicateKey(doc, &duplicate)) {
    duplicate.erase(0, 1);  // the body is an object: its keys' paths start with '.'
    return Error(param, duplicate,
                 fmt::format("key {} is given twice: give each key once (replicas read the last "
                             "copy, the gateway's limits the first)",
                             duplicate));
  }
  RequestInfo info;
  info.endpoint = endpoint;
  TITAN_RETURN_IF_ERROR(GetString(object, "model", param, &info.model));
  TITAN_RETURN_IF_ERROR(GetBool(object, "stream", "stream", param, &info.stream));
  if (auto options = Field(object, "stream_options")) {
    dom::object o;
    if (options->get_object().get(o) != simdjson::SUCCESS) {
      return Error(param, "stream_options",
                   fmt::format("stream_options must be an object such as "
                               "{{\"include_usage\":true}}, got {}",
                               DescribeJsonValue(*options)));
    }
    TITAN_RETURN_IF_ERROR(
        GetBool(o, "include_usage", "stream_options.include_usage", param, &info.include_usage));
  }
  std::optional<int64_t> max_tokens;
  TITAN_RETURN_IF_ERROR(
      GetInteger(object, "max_tokens", 0, "a non-negative integer", param, &max_tokens));
  if (endpoint == Endpoint::kChatCompletions) {
    std::optional<int64_t> max_completion;
    TITAN_RETURN_IF_ERROR(GetInteger(object, "max_completion_tokens", 0, "a non-negative integer",
                                     param, &max_completion));
    if (max_completion) max_tokens = max_completion;
  }
  info.max_tokens = max_tokens.value_or(-1);
  std::optional<int64_t> n;
  TITAN_RETURN_IF_ERROR(GetInteger(object, "n", 1, "an integer >= 1", param, &n));
  info.n = n.value_or(1);
  TITAN_RETURN_IF_ERROR(GetString(object, "user", param, &info.user));
  switch (endpoint) {
    case Endpoint::kCompletions:
      TITAN_RETURN_IF_ERROR(GetPrompt(object, "prompt", limits, param, &info));
      break;
    case Endpoint::kEmbeddings:
      TITAN_RETURN_IF_ERROR(GetPrompt(object, "input", limits, param, &info));
      break;
    case Endpoint::kChatCompletions:
      TITAN_RETURN_IF_ERROR(GetMessages(object, param, &info));
      break;
    case Endpoint::kOther:
      break;
  }
  return info;
}

}  // namespace titan::gateway
