#include "src/serve_sim/request.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>
#include <simdjson.h>

#include "src/base/duration.h"

namespace titan::serve_sim {
namespace {

namespace dom = simdjson::dom;

Status Error(std::string* param, std::string_view field, std::string message) {
  if (param) *param = std::string(field);
  return InvalidArgumentError(std::move(message));
}

std::string_view TypeName(dom::element_type type) {
  switch (type) {
    case dom::element_type::ARRAY:
      return "an array";
    case dom::element_type::OBJECT:
      return "an object";
    case dom::element_type::INT64:
    case dom::element_type::UINT64:
    case dom::element_type::DOUBLE:
      return "a number";
    case dom::element_type::STRING:
      return "a string";
    case dom::element_type::BOOL:
      return "a boolean";
    case dom::element_type::NULL_VALUE:
      return "null";
  }
  return "a value";
}

// Parses `body` into the top-level object. The returned elements live until the next parse on
// this thread.
Result<dom::object> ParseObject(std::string_view body, int max_depth, std::string* param) {
  thread_local dom::parser parser;
  thread_local int allocated_depth = 0;
  if (allocated_depth != max_depth) {
    if (parser.allocate(64 << 10, static_cast<size_t>(max_depth)) != simdjson::SUCCESS) {
      return ResourceExhaustedError("cannot allocate the JSON parser");
    }
    allocated_depth = max_depth;
  }
  dom::element doc;
  const simdjson::error_code error = parser.parse(body.data(), body.size(), true).get(doc);
  if (error == simdjson::DEPTH_ERROR) {
    return Error(param, "",
                 fmt::format("the JSON body is nested deeper than {} levels", max_depth));
  }
  if (error != simdjson::SUCCESS) {
    return Error(param, "",
                 fmt::format("the body is not valid JSON: {}", simdjson::error_message(error)));
  }
  dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) {
    return Error(param, "",
                 fmt::format("the body must be a JSON object, not {}", TypeName(doc.type())));
  }
  return object;
}

// The field's value, or nullopt when it is absent or null.
std::optional<dom::element> Field(dom::object object, std::string_view key) {
  dom::element value;
  if (object.at_key(key).get(value) != simdjson::SUCCESS || value.is_null()) return std::nullopt;
  return value;
}

Status WrongType(std::string* param, std::string_view field, std::string_view want,
                 dom::element got) {
  return Error(param, field,
               fmt::format("'{}' must be {}, not {}", field, want, TypeName(got.type())));
}

Status GetString(dom::object object, std::string_view key, std::string* param,
                 std::optional<std::string_view>* out) {
  auto value = Field(object, key);
  if (!value) return OkStatus();
  std::string_view text;
  if (value->get_string().get(text) != simdjson::SUCCESS) {
    return WrongType(param, key, "a string", *value);
  }
  *out = text;
  return OkStatus();
}

Status GetBool(dom::object object, std::string_view key, std::string* param, bool* out) {
  auto value = Field(object, key);
  if (!value) return OkStatus();
  if (value->get_bool().get(*out) != simdjson::SUCCESS) {
    return WrongType(param, key, "a boolean", *value);
  }
  return OkStatus();
}

// An integer (also written as an integral float such as 16.0) in [lo, hi].
Status GetInteger(dom::object object, std::string_view key, int64_t lo, int64_t hi,
                  std::string* param, std::optional<int64_t>* out) {
  auto value = Field(object, key);
  if (!value) return OkStatus();
  int64_t n = 0;
  bool in_range = true;
  switch (value->type()) {
    case dom::element_type::INT64:
      n = value->get_int64().value_unsafe();
      break;
    case dom::element_type::UINT64:
      in_range = false;
      break;
    case dom::element_type::DOUBLE: {
      const double d = value->get_double().value_unsafe();
      if (d != std::floor(d)) {
        return Error(param, key, fmt::format("'{}' must be an integer, not {}", key, d));
      }
      if (d < -9.2e18 || d > 9.2e18) {
        in_range = false;
      } else {
        n = static_cast<int64_t>(d);
      }
      break;
    }
    default:
      return WrongType(param, key, "an integer", *value);
  }
  if (!in_range || n < lo || n > hi) {
    return Error(param, key, fmt::format("'{}' must be in [{}, {}]", key, lo, hi));
  }
  *out = n;
  return OkStatus();
}

Status GetNumber(dom::element value, std::string_view key, std::string* param, double* out) {
  if (value.get_double().get(*out) != simdjson::SUCCESS) {
    return WrongType(param, key, "a number", value);
  }
  return OkStatus();
}

// "prompt": a string or a list of one string.
Status GetPrompt(dom::object object, std::string_view key, std::string* param,
                 std::optional<std::string_view>* out) {
  auto value = Field(object, key);
  if (!value) return OkStatus();
  std::string_view text;
  if (value->get_string().get(text) == simdjson::SUCCESS) {
    *out = text;
    return OkStatus();
  }
  dom::array list;
  if (value->get_array().get(list) == simdjson::SUCCESS) {
    if (list.size() != 1) {
      return Error(param, key,
                   fmt::format("'{}' must be a string or a list of exactly one string (got a "
                               "list of {}); send one request per prompt",
                               key, list.size()));
    }
    if (list.at(0).get_string().get(text) != simdjson::SUCCESS) {
      return Error(param, key,
                   fmt::format("'{}' must be a string or a list of one string; token-id "
                               "prompts are not supported",
                               key));
    }
    *out = text;
    return OkStatus();
  }
  return WrongType(param, key, "a string or a list of one string", *value);
}

// "messages": the contents joined by "\n" into *prompt.
Status GetMessages(dom::object object, std::string* param, bool required, bool* present,
                   std::string* prompt) {
  auto value = Field(object, "messages");
  *present = value.has_value();
  if (!value) {
    if (required) return Error(param, "messages", "'messages' is required");
    return OkStatus();
  }
  dom::array list;
  if (value->get_array().get(list) != simdjson::SUCCESS) {
    return WrongType(param, "messages", "a list of messages", *value);
  }
  if (list.size() == 0) return Error(param, "messages", "'messages' must not be empty");
  size_t index = 0;
  for (dom::element message : list) {
    const std::string field = fmt::format("messages[{}]", index++);
    dom::object m;
    if (message.get_object().get(m) != simdjson::SUCCESS) {
      return WrongType(param, field, "an object", message);
    }
    std::optional<std::string_view> role;
    TITAN_RETURN_IF_ERROR(GetString(m, "role", param, &role));
    if (!role) return Error(param, field + ".role", fmt::format("'{}.role' is required", field));
    auto content = Field(m, "content");
    if (!content) continue;
    std::string_view text;
    dom::array parts;
    if (content->get_string().get(text) == simdjson::SUCCESS) {
      if (!prompt->empty()) prompt->push_back('\n');
      prompt->append(text);
    } else if (content->get_array().get(parts) == simdjson::SUCCESS) {
      for (dom::element part : parts) {
        dom::object p;
        std::string_view type, part_text;
        if (part.get_object().get(p) != simdjson::SUCCESS ||
            p.at_key("type").get_string().get(type) != simdjson::SUCCESS || type != "text" ||
            p.at_key("text").get_string().get(part_text) != simdjson::SUCCESS) {
          return Error(param, field + ".content",
                       fmt::format("'{}.content' parts must be {{\"type\":\"text\",\"text\":"
                                   "string}}; only text is supported",
                                   field));
        }
        if (!prompt->empty()) prompt->push_back('\n');
        prompt->append(part_text);
      }
    } else {
      return WrongType(param, field + ".content", "a string or a list of text parts", *content);
    }
  }
  return OkStatus();
}

Status TooLong(std::string* param, std::string_view field, int64_t prompt, int64_t max_tokens,
               int64_t max_model_len) {
  return Error(param, field,
               fmt::format("this model's maximum context length is {} tokens; the request has {} "
                           "prompt tokens and max_tokens {} ({} in all): shorten the prompt or "
                           "lower max_tokens",
                           max_model_len, prompt, max_tokens, prompt + max_tokens));
}

}  // namespace

Result<GenerateRequest> ParseGenerateRequest(std::string_view body, bool chat,
                                             const ParseLimits& limits, std::string* param) {
  TITAN_ASSIGN_OR_RETURN(dom::object object, ParseObject(body, limits.max_depth, param));
  GenerateRequest out;
  out.chat = chat;
  std::optional<std::string_view> model;
  TITAN_RETURN_IF_ERROR(GetString(object, "model", param, &model));
  if (model) out.model = std::string(*model);
  if (chat) {
    std::string prompt;
    bool present = false;
    TITAN_RETURN_IF_ERROR(GetMessages(object, param, true, &present, &prompt));
    out.prompt = TokenizePrompt(prompt, limits.block_tokens);
  } else {
    std::optional<std::string_view> prompt;
    TITAN_RETURN_IF_ERROR(GetPrompt(object, "prompt", param, &prompt));
    if (!prompt) return Error(param, "prompt", "'prompt' is required");
    out.prompt = TokenizePrompt(*prompt, limits.block_tokens);
  }
  std::optional<int64_t> max_tokens;
  TITAN_RETURN_IF_ERROR(
      GetInteger(object, "max_tokens", 1, limits.max_tokens_limit, param, &max_tokens));
  std::string_view max_field = "max_tokens";
  if (chat) {
    std::optional<int64_t> max_completion;
    TITAN_RETURN_IF_ERROR(GetInteger(object, "max_completion_tokens", 1, limits.max_tokens_limit,
                                     param, &max_completion));
    if (max_completion) {
      max_tokens = max_completion;
      max_field = "max_completion_tokens";
    }
  }
  out.max_tokens = max_tokens.value_or(limits.default_max_tokens);
  if (out.prompt.count > limits.max_model_len ||
      out.prompt.count + out.max_tokens > limits.max_model_len) {
    const bool prompt_alone = out.prompt.count >= limits.max_model_len || !max_tokens;
    return TooLong(param, prompt_alone ? (chat ? "messages" : "prompt") : max_field,
                   out.prompt.count, out.max_tokens, limits.max_model_len);
  }
  std::optional<int64_t> n;
  TITAN_RETURN_IF_ERROR(GetInteger(object, "n", std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max(), param, &n));
  if (n && *n != 1) {
    return Error(param, "n", fmt::format("'n' must be 1 (got {}); send n requests instead", *n));
  }
  TITAN_RETURN_IF_ERROR(GetBool(object, "stream", param, &out.stream));
  TITAN_RETURN_IF_ERROR(GetBool(object, "ignore_eos", param, &out.ignore_eos));
  if (auto options = Field(object, "stream_options")) {
    dom::object o;
    if (options->get_object().get(o) != simdjson::SUCCESS) {
      return WrongType(param, "stream_options", "an object", *options);
    }
    auto usage = Field(o, "include_usage");
    if (usage && usage->get_bool().get(out.include_usage) != simdjson::SUCCESS) {
      return WrongType(param, "stream_options.include_usage", "a boolean", *usage);
    }
  }
  if (auto seed = Field(object, "seed")) {
    int64_t signed_seed = 0;
    uint64_t unsigned_seed = 0;
    if (seed->get_int64().get(signed_seed) == simdjson::SUCCESS) {
      out.seed = static_cast<uint64_t>(signed_seed);
    } else if (seed->get_uint64().get(unsigned_seed) == simdjson::SUCCESS) {
      out.seed = unsigned_seed;
    } else {
      return WrongType(param, "seed", "an integer", *seed);
    }
  }
  return out;
}

Result<EmbeddingRequest> ParseEmbeddingRequest(std::string_view body, const ParseLimits& limits,
                                               std::string* param) {
  TITAN_ASSIGN_OR_RETURN(dom::object object, ParseObject(body, limits.max_depth, param));
  EmbeddingRequest out;
  std::optional<std::string_view> model, format;
  TITAN_RETURN_IF_ERROR(GetString(object, "model", param, &model));
  if (model) out.model = std::string(*model);
  TITAN_RETURN_IF_ERROR(GetString(object, "encoding_format", param, &format));
  if (format && *format != "float") {
    return Error(param, "encoding_format", "'encoding_format' must be \"float\"");
  }
  TITAN_RETURN_IF_ERROR(
      GetInteger(object, "dimensions", 1, limits.max_embedding_dim, param, &out.dimensions));
  auto input = Field(object, "input");
  if (!input) return Error(param, "input", "'input' is required");
  auto add = [&](std::string_view text) -> Status {
    const int64_t tokens = CountTokens(text);
    if (tokens > limits.max_model_len) {
      return Error(param, "input",
                   fmt::format("an input has {} tokens, over this model's maximum context "
                               "length of {}",
                               tokens, limits.max_model_len));
    }
    uint64_t hash = 0x9e3779b97f4a7c15ULL;
    for (char c : text) hash = SplitMix64(hash ^ static_cast<unsigned char>(c));
    out.input_tokens.push_back(tokens);
    out.input_hashes.push_back(hash);
    out.total_tokens += tokens;
    return OkStatus();
  };
  std::string_view text;
  dom::array list;
  if (input->get_string().get(text) == simdjson::SUCCESS) {
    TITAN_RETURN_IF_ERROR(add(text));
  } else if (input->get_array().get(list) == simdjson::SUCCESS) {
    if (list.size() == 0) return Error(param, "input", "'input' must not be an empty list");
    if (static_cast<int64_t>(list.size()) > limits.max_inputs) {
      return Error(param, "input",
                   fmt::format("'input' has {} strings; at most {} per request", list.size(),
                               limits.max_inputs));
    }
    for (dom::element item : list) {
      if (item.get_string().get(text) != simdjson::SUCCESS) {
        return Error(param, "input",
                     "'input' must be a string or a list of strings; token-id inputs are not "
                     "supported");
      }
      TITAN_RETURN_IF_ERROR(add(text));
    }
  } else {
    return WrongType(param, "input", "a string or a list of strings", *input);
  }
  return out;
}

Result<std::string> ParseTokenizeRequest(std::string_view body, const ParseLimits& limits,
                                         std::string* param) {
  TITAN_ASSIGN_OR_RETURN(dom::object object, ParseObject(body, limits.max_depth, param));
  std::optional<std::string_view> text;
  TITAN_RETURN_IF_ERROR(GetPrompt(object, "prompt", param, &text));
  if (!text) TITAN_RETURN_IF_ERROR(GetString(object, "content", param, &text));
  if (text) return std::string(*text);
  std::string prompt;
  bool present = false;
  TITAN_RETURN_IF_ERROR(GetMessages(object, param, false, &present, &prompt));
  if (!present) {
    return Error(param, "prompt",
                 "give the text as 'prompt' (vLLM), 'content' (llama.cpp) or 'messages'");
  }
  return prompt;
}

Result<AdminFault> ParseAdminFault(std::string_view body, std::string* param) {
  TITAN_ASSIGN_OR_RETURN(dom::object object, ParseObject(body, 8, param));
  AdminFault out;
  bool any = false;
  for (dom::key_value_pair field : object) {
    const std::string_view key = field.key;
    dom::element value = field.value;
    any = true;
    if (key == "stall") {
      std::string_view text;
      double seconds = 0;
      int64_t ns = 0;
      if (value.get_string().get(text) == simdjson::SUCCESS) {
        if (!ParseDurationNs(text, &ns)) {
          return Error(
              param, key,
              fmt::format("'stall' is '{}'; give a duration such as \"300ms\" or \"2s\"", text));
        }
      } else if (value.get_double().get(seconds) == simdjson::SUCCESS) {
        if (!(seconds > 0 && seconds <= 86400)) {
          return Error(param, key, "'stall' in seconds must be in (0, 86400]");
        }
        ns = std::llround(seconds * 1e9);
      } else {
        return WrongType(param, key, "a duration string or a number of seconds", value);
      }
      out.stall_ns = std::max<int64_t>(ns, 1);
    } else if (key == "slow") {
      double factor = 0;
      TITAN_RETURN_IF_ERROR(GetNumber(value, key, param, &factor));
      if (!(factor > 0 && factor <= 1e6)) {
        return Error(param, key, "'slow' must be a factor in (0, 1e6]; 1 restores full speed");
      }
      out.slow = factor;
    } else if (key == "error_rate") {
      double rate = 0;
      TITAN_RETURN_IF_ERROR(GetNumber(value, key, param, &rate));
      if (!(rate >= 0 && rate <= 1)) return Error(param, key, "'error_rate' must be in [0, 1]");
      out.error_rate = rate;
    } else if (key == "crash") {
      if (value.get_bool().get(out.crash) != simdjson::SUCCESS) {
        return WrongType(param, key, "a boolean", value);
      }
    } else {
      return Error(param, key,
                   fmt::format("unknown fault '{}'; known: stall, slow, error_rate, crash", key));
    }
  }
  if (!any) {
    return Error(param, "",
                 "the body names no fault; e.g. {\"stall\":\"2s\"}, {\"slow\":5}, "
                 "{\"error_rate\":0.1}, {\"crash\":true}");
  }
  return out;
}

Result<FaultSpec> ParseFaultSpec(std::string_view text) {
  constexpr std::string_view kForms =
      "stall=DURATION@TIME, slow=FACTOR@TIME, error-rate=P[@TIME] or crash@TIME (TIME after "
      "start, e.g. 10s)";
  FaultSpec out;
  std::string_view head = text;
  const size_t at = text.find('@');
  if (at != std::string_view::npos) {
    head = text.substr(0, at);
    const std::string_view when = text.substr(at + 1);
    if (!ParseDurationOrZeroNs(when, &out.at_ns)) {
      return InvalidArgumentError(
          fmt::format("--fault '{}': '{}' is not a time after start such as 10s", text, when));
    }
  }
  const size_t eq = head.find('=');
  const std::string_view name = head.substr(0, eq);
  const std::string_view value = eq == std::string_view::npos ? "" : head.substr(eq + 1);
  auto number = [&](double* out_value) {
    const std::string copy(value);
    char* end = nullptr;
    *out_value = std::strtod(copy.c_str(), &end);
    return !copy.empty() && end == copy.c_str() + copy.size() && std::isfinite(*out_value);
  };
  if (name == "crash" && eq == std::string_view::npos) {
    if (at == std::string_view::npos) {
      return InvalidArgumentError(fmt::format("--fault '{}': say when, e.g. crash@30s", text));
    }
    out.kind = FaultSpec::Kind::kCrash;
    return out;
  }
  if (name == "stall") {
    out.kind = FaultSpec::Kind::kStall;
    if (!ParseDurationNs(value, &out.duration_ns)) {
      return InvalidArgumentError(
          fmt::format("--fault '{}': the stall needs a duration, e.g. stall=2s@10s", text));
    }
    return out;
  }
  if (name == "slow") {
    out.kind = FaultSpec::Kind::kSlow;
    if (!number(&out.value) || !(out.value > 0 && out.value <= 1e6)) {
      return InvalidArgumentError(
          fmt::format("--fault '{}': slow needs a factor in (0, 1e6], e.g. slow=5@20s", text));
    }
    return out;
  }
  if (name == "error-rate" || name == "error_rate") {
    out.kind = FaultSpec::Kind::kErrorRate;
    if (!number(&out.value) || !(out.value >= 0 && out.value <= 1)) {
      return InvalidArgumentError(fmt::format(
          "--fault '{}': error-rate needs a probability in [0, 1], e.g. error-rate=0.05", text));
    }
    return out;
  }
  return InvalidArgumentError(fmt::format("--fault '{}': expected {}", text, kForms));
}

}  // namespace titan::serve_sim
