#include "src/load/openai.h"

#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"

namespace titan::load {

bool ParseApi(std::string_view text, Api* out) {
  if (text == "completions") {
    *out = Api::kCompletions;
  } else if (text == "chat") {
    *out = Api::kChat;
  } else if (text == "embeddings") {
    *out = Api::kEmbeddings;
  } else {
    return false;
  }
  return true;
}

std::string_view ApiName(Api api) {
  switch (api) {
    case Api::kCompletions:
      return "completions";
    case Api::kChat:
      return "chat";
    case Api::kEmbeddings:
      return "embeddings";
  }
  return "?";
}

std::string_view ApiPath(Api api) {
  switch (api) {
    case Api::kCompletions:
      return "/v1/completions";
    case Api::kChat:
      return "/v1/chat/completions";
    case Api::kEmbeddings:
      return "/v1/embeddings";
  }
  return "/";
}

Status SetExtraFields(std::string_view text, ApiOptions* options) {
  options->extra_fields.clear();
  if (Trim(text).empty()) return OkStatus();
  const std::string object = fmt::format("{{{}}}", text);
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(object, "--extra-body"));
  std::set<std::string> keys;
  std::string duplicate;
  nlohmann::json parsed = nlohmann::json::parse(
      object,
      [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& value) {
        if (depth == 1 && event == nlohmann::json::parse_event_t::key &&
            !keys.insert(value.get<std::string>()).second && duplicate.empty()) {
          duplicate = value.get<std::string>();
        }
        return true;
      },
      /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return InvalidArgumentError(
        fmt::format("--extra-body '{}' is not JSON object members; write them without braces, e.g. "
                    "'\"top_k\":1,\"seed\":7'",
                    Excerpt(text)));
  }
  if (!duplicate.empty()) {
    return InvalidArgumentError(
        fmt::format("--extra-body gives \"{}\" twice; keep one", Excerpt(duplicate)));
  }
  static constexpr std::pair<std::string_view, std::string_view> kOwned[] = {
      {"model", "--model"},
      {"prompt", "--input-tokens or --prompts"},
      {"messages", "--api chat"},
      {"input", "--input-tokens or --prompts"},
      {"max_tokens", "--output-tokens"},
      {"ignore_eos", "--no-ignore-eos"},
      {"stream", "--no-stream"},
      {"stream_options", "--no-stream"}};
  std::string rest;
  for (const auto& [key, value] : parsed.items()) {
    for (const auto& [owned, flag] : kOwned) {
      if (key == owned) {
        return InvalidArgumentError(fmt::format(
            "--extra-body sets \"{}\", which titan load writes itself: use {}", key, flag));
      }
    }
    if (key == "temperature") {
      if (!value.is_number() || !(value.get<double>() >= 0)) {
        return InvalidArgumentError("--extra-body: \"temperature\" must be a number >= 0");
      }
      options->temperature = value.get<double>();
      continue;
    }
    if (!rest.empty()) rest.push_back(',');
    rest += nlohmann::json(key).dump() + ":" + value.dump();
  }
  options->extra_fields = std::move(rest);
  return OkStatus();
}

std::string BuildRequestBody(const ApiOptions& options, std::string_view prompt,
                             const std::vector<ChatMessage>& messages, int64_t max_tokens) {
  std::string body;
  body.reserve(prompt.size() + 256);
  body.append("{\"model\":");
  AppendJsonString(options.model, &body);
  if (options.api == Api::kEmbeddings) {
    body.append(",\"input\":");
    AppendJsonString(prompt, &body);
  } else {
    if (options.api == Api::kChat) {
      body.append(",\"messages\":[");
      if (messages.empty()) {
        body.append("{\"role\":\"user\",\"content\":");
        AppendJsonString(prompt, &body);
        body.push_back('}');
      }
      for (size_t i = 0; i < messages.size(); ++i) {
        if (i > 0) body.push_back(',');
        body.append("{\"role\":");
        AppendJsonString(messages[i].role, &body);
        body.append(",\"content\":");
        AppendJsonString(messages[i].content, &body);
        body.push_back('}');
      }
      body.push_back(']');
    } else {
      body.append(",\"prompt\":");
      AppendJsonString(prompt, &body);
    }
    body.append(
        fmt::format(",\"max_tokens\":{},\"temperature\":{}", max_tokens, options.temperature));
    if (options.ignore_eos) {
      // vLLM's and llama.cpp's spelling; llama.cpp also stops at n_predict = max_tokens.
      body.append(",\"ignore_eos\":true");
    }
    if (options.stream) {
      body.append(",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    }
  }
  if (!options.extra_fields.empty()) {
    body.push_back(',');
    body.append(options.extra_fields);
  }
  body.push_back('}');
  return body;
}

namespace {

bool NonEmptyString(simdjson::dom::element element, std::string_view key) {
  std::string_view text;
  return element[key].get(text) == simdjson::SUCCESS && !text.empty();
}

int64_t IntOr(simdjson::dom::element element, std::string_view key, int64_t fallback) {
  int64_t value = 0;
  if (element[key].get(value) == simdjson::SUCCESS) return value;
  double d = 0;
  if (element[key].get(d) == simdjson::SUCCESS) return static_cast<int64_t>(d);
  return fallback;
}

double DoubleOr(simdjson::dom::element element, std::string_view key, double fallback) {
  double value = 0;
  if (element[key].get(value) == simdjson::SUCCESS) return value;
  int64_t i = 0;
  if (element[key].get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  return fallback;
}

}  // namespace

Status ResponseParser::Parse(std::string_view json, Api api, ResponseInfo* info) {
  *info = ResponseInfo{};
  simdjson::dom::element root;
  if (auto error = parser_.parse(json.data(), json.size()).get(root); error) {
    std::string_view head = json.substr(0, 60);
    return InvalidArgumentError(fmt::format("not JSON ({}): '{}{}'", simdjson::error_message(error),
                                            head, json.size() > head.size() ? "..." : ""));
  }
  simdjson::dom::object object;
  if (root.get(object) != simdjson::SUCCESS) {
    return InvalidArgumentError("expected a JSON object");
  }
  simdjson::dom::element error_element;
  if (root["error"].get(error_element) == simdjson::SUCCESS && !error_element.is_null()) {
    std::string_view message;
    if (error_element["message"].get(message) != simdjson::SUCCESS) message = "(no message)";
    return DataLossError(fmt::format("the server sent an error object: {}", message));
  }
  simdjson::dom::element usage;
  if (root["usage"].get(usage) == simdjson::SUCCESS && usage.is_object()) {
    info->prompt_tokens = IntOr(usage, "prompt_tokens", -1);
    info->completion_tokens = IntOr(usage, "completion_tokens", -1);
  }
  simdjson::dom::element timings;
  if (root["timings"].get(timings) == simdjson::SUCCESS && timings.is_object()) {
    info->server_prompt_ms = DoubleOr(timings, "prompt_ms", -1);
    info->server_predicted_ms = DoubleOr(timings, "predicted_ms", -1);
    info->server_predicted_per_token_ms = DoubleOr(timings, "predicted_per_token_ms", -1);
    info->server_cache_tokens = static_cast<int32_t>(IntOr(timings, "cache_n", -1));
  }
  if (api == Api::kEmbeddings) {
    simdjson::dom::array data;
    if (root["data"].get(data) == simdjson::SUCCESS) info->embeddings = data.size();
    return OkStatus();
  }
  simdjson::dom::array choices;
  if (root["choices"].get(choices) != simdjson::SUCCESS) return OkStatus();
  for (simdjson::dom::element choice : choices) {
    if (api == Api::kChat) {
      simdjson::dom::element part;
      if (choice["delta"].get(part) != simdjson::SUCCESS &&
          choice["message"].get(part) != simdjson::SUCCESS) {
        continue;
      }
      if (NonEmptyString(part, "content") || NonEmptyString(part, "reasoning_content")) {
        info->has_content = true;
      }
    } else if (NonEmptyString(choice, "text")) {
      info->has_content = true;
    }
  }
  return OkStatus();
}

}  // namespace titan::load
