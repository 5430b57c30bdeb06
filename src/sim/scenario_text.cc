#include "src/sim/scenario_text.h"

#include "src/base/json_depth.h"

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "src/base/env.h"
#include "src/base/json_depth.h"
#include "src/base/text.h"
#include "src/sim/presets.h"

namespace titan::sim {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 32;
constexpr int kMaxNodes = 100000;

// A plain (unquoted) YAML scalar as the JSON value it reads as.
json ScalarValue(const std::string& text, bool quoted) {
  if (quoted) return text;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  int64_t integer = 0;
  if (ParseInt64(text, &integer)) return integer;
  double number = 0;
  if (ParseDouble(text, &number)) return number;
  return text;  // includes .nan / .inf: rejected later as "not a number"
}

struct Converter {
  std::string_view origin;
  int nodes = 0;

  Result<json> Convert(const YAML::Node& node, int depth) {
    if (++nodes > kMaxNodes) {
      return InvalidArgumentError(
          fmt::format("{}: more than {} YAML nodes (after expanding aliases); a scenario is small",
                      origin, kMaxNodes));
    }
    if (depth > kMaxDepth) {
      return InvalidArgumentError(fmt::format("{}: nested deeper than {} levels at line {}", origin,
                                              kMaxDepth, node.Mark().line + 1));
    }
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return json(nullptr);
      case YAML::NodeType::Scalar:
        return ScalarValue(node.Scalar(), node.Tag() == "!");
      case YAML::NodeType::Sequence: {
        json out = json::array();
        for (const YAML::Node& item : node) {
          TITAN_ASSIGN_OR_RETURN(json value, Convert(item, depth + 1));
          out.push_back(std::move(value));
        }
        return out;
      }
      case YAML::NodeType::Map: {
        json out = json::object();
        for (const auto& item : node) {
          if (!item.first.IsScalar()) {
            return InvalidArgumentError(fmt::format("{}: line {}: mapping keys must be plain words",
                                                    origin, item.first.Mark().line + 1));
          }
          TITAN_ASSIGN_OR_RETURN(json value, Convert(item.second, depth + 1));
          out[item.first.Scalar()] = std::move(value);
        }
        return out;
      }
    }
    return json(nullptr);
  }
};

Result<json> ParseYaml(std::string_view text, std::string_view origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("{}: line {}, column {}: YAML: {}", origin,
                                            e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("{}: YAML: {}", origin, e.what()));
  }
  Converter converter{origin};
  try {
    return converter.Convert(root, 0);
  } catch (const std::exception& e) {  // yaml-cpp may throw while iterating bad nodes
    return InvalidArgumentError(fmt::format("{}: YAML: {}", origin, e.what()));
  }
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
      *child = ScalarValue(std::string(value), /*quoted=*/false);
      return OkStatus();
    }
    if (child->is_null()) *child = json::object();
    node = child;
    rest.remove_prefix(dot + 1);
  }
}

}  // namespace titan::sim
