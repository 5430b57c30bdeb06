#include "src/sim/scenario_text.h"

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "src/base/env.h"
#include "src/base/json_depth.h"
#include "src/base/text.h"
#include "src/base/yaml_json.h"
#include "src/sim/presets.h"

namespace titan::sim {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 32;
constexpr int kMaxNodes = 100000;

Result<json> ParseYaml(std::string_view text, std::string_view origin) {
  TITAN_ASSIGN_OR_RETURN(std::vector<json> docs,
                         YamlToJson(text, origin, YamlLimits{kMaxDepth, kMaxNodes}));
  if (docs.size() > 1) {
    return InvalidArgumentError(
        fmt::format("{}: {} YAML documents; a scenario is one", origin, docs.size()));
  }
  return docs.empty() ? json(nullptr) : std::move(docs[0]);
}

Result<json> ParseJson(std::string_view text, std::string_view origin) {
  // Depth is bounded before parsing: a deep tree is not a scenario.
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(text, origin, kMaxDepth));
  json tree;
  try {  // nlohmann reports the byte offset only through its exception; confined here
    tree = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return InvalidArgumentError(fmt::format("{}: JSON: {}", origin, e.what()));
  }
  return tree;
}

}  // namespace

Result<json> ParseScenarioText(std::string_view text, std::string_view origin) {
  if (text.size() > kMaxScenarioBytes) {
    return InvalidArgumentError(fmt::format("{}: {} bytes; a scenario is at most {} bytes", origin,
                                            text.size(), kMaxScenarioBytes));
  }
  const size_t first = text.find_first_not_of(" \t\r\n");
  const bool is_json = first != std::string_view::npos && text[first] == '{';
  TITAN_ASSIGN_OR_RETURN(json tree, is_json ? ParseJson(text, origin) : ParseYaml(text, origin));
  if (!tree.is_object()) {
    return InvalidArgumentError(fmt::format(
        "{}: the scenario must be a mapping of sections (cluster:, failures:, job:, ...)", origin));
  }
  return tree;
}

Result<json> LoadScenarioTree(const std::string& name_or_path) {
  if (const char* preset = FindPreset(name_or_path)) return ParseScenarioText(preset, name_or_path);
  std::error_code error;
  if (!std::filesystem::exists(name_or_path, error)) {
    return NotFoundError(fmt::format("'{}' is neither a scenario file nor a preset (presets: {})",
                                     name_or_path, PresetNames()));
  }
  // Env::ReadFile opens regular files only: a FIFO would block forever, a device is no scenario.
  TITAN_ASSIGN_OR_RETURN(std::string text, Env::ReadFile(name_or_path, kMaxScenarioBytes));
  return ParseScenarioText(text, name_or_path);
}

Status SetTreePath(json* tree, std::string_view dotted_path, std::string_view value) {
  json* node = tree;
  std::string_view rest = dotted_path;
  while (true) {
    const size_t dot = rest.find('.');
    const std::string key(rest.substr(0, dot));
    if (key.empty()) {
      return InvalidArgumentError(fmt::format("'{}': empty key in dotted path", dotted_path));
    }
    json* child = nullptr;
    int64_t index = 0;
    if (node->is_array() && ParseInt64(key, &index)) {  // list element: causes.0.name
      if (index < 0 || index >= static_cast<int64_t>(node->size())) {
        return InvalidArgumentError(fmt::format("'{}': index {} is outside the list of {}",
                                                dotted_path, index, node->size()));
      }
      child = &(*node)[static_cast<size_t>(index)];
    } else if (node->is_object()) {
      child = &(*node)[key];
    } else {
      return InvalidArgumentError(
          fmt::format("'{}': '{}' is inside a value that is not a section", dotted_path, key));
    }
    if (dot == std::string_view::npos) {
      *child = YamlPlainScalar(std::string(value));
      return OkStatus();
    }
    if (child->is_null()) *child = json::object();
    node = child;
    rest.remove_prefix(dot + 1);
  }
}

}  // namespace titan::sim
