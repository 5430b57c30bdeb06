#include "src/base/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "src/base/json_depth.h"
#include "src/base/text.h"

namespace titan {

namespace {

using nlohmann::json;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

json YamlPlainScalar(const std::string& text) {
  std::string lower = Lower(text);
  if (text.empty() || text == "~" || lower == "null") return nullptr;
  if (lower == "true") return true;
  if (lower == "false") return false;
  int64_t i = 0;
  if (ParseInt64(text, &i)) return i;
  double d = 0;
  if (text.find_first_of("0123456789") != std::string::npos &&
      text.find_first_not_of("0123456789+-.eE") == std::string::npos && ParseDouble(text, &d)) {
    return d;
  }
  return text;
}

namespace {

struct Converter {
  std::string_view origin;
  YamlLimits limits;
  size_t nodes = 0;

  Result<json> Convert(const YAML::Node& node, int depth) {
    if (++nodes > limits.max_nodes) {
      return InvalidArgumentError(fmt::format(
          "{}: more than {} YAML nodes (aliases expanding?); split or simplify the file", origin,
          limits.max_nodes));
    }
    if (depth > limits.max_depth) {
      return InvalidArgumentError(fmt::format("{}: YAML nested deeper than {} levels near line {}",
                                              origin, limits.max_depth, node.Mark().line + 1));
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return json(nullptr);
      case YAML::NodeType::Scalar:
        // A plain scalar's tag is "?"; a quoted one's is "!".
        return node.Tag() == "?" ? YamlPlainScalar(node.Scalar()) : json(node.Scalar());
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
        for (const auto& kv : node) {
          if (!kv.first.IsScalar()) {
            return InvalidArgumentError(
                fmt::format("{}: line {}: a mapping key must be a plain string", origin,
                            kv.first.Mark().line + 1));
          }
          if (out.contains(kv.first.Scalar())) {
            return InvalidArgumentError(fmt::format(
                "{}: line {}: key '{}' given twice in one mapping (which one is meant?)", origin,
                kv.first.Mark().line + 1, kv.first.Scalar()));
          }
          TITAN_ASSIGN_OR_RETURN(json value, Convert(kv.second, depth + 1));
          out[kv.first.Scalar()] = std::move(value);
        }
        return out;
      }
    }
    return json(nullptr);
  }
};

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  char c = s[0];
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') return true;
  static constexpr std::string_view kWords[] = {"true", "false", "yes", "no",   "on",
                                                "off",  "y",     "n",   "null", "~"};
  std::string lower = Lower(s);
  return std::find(std::begin(kWords), std::end(kWords), lower) != std::end(kWords);
}

void Emit(const json& value, YAML::Emitter& out) {
  switch (value.type()) {
    case json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, item] : value.items()) {
        out << YAML::Key;
        if (NeedsQuotes(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        Emit(item, out);
      }
      out << YAML::EndMap;
      break;
    case json::value_t::array:
      out << YAML::BeginSeq;
      for (const json& item : value) Emit(item, out);
      out << YAML::EndSeq;
      break;
    case json::value_t::string: {
      const std::string& s = value.get_ref<const std::string&>();
      if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case json::value_t::boolean:
      out << (value.get<bool>() ? "true" : "false");
      break;
    case json::value_t::null:
      out << YAML::Null;
      break;
    default:  // numbers
      out << value.dump();
      break;
  }
}

}  // namespace

Result<std::vector<json>> YamlToJson(std::string_view text, std::string_view origin,
                                     YamlLimits limits) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("{}: line {}: {}", origin, e.mark.line + 1, e.msg));
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("{}: YAML: {}", origin, e.what()));
  }
  std::vector<json> out;
  Converter converter{origin, limits};
  for (const YAML::Node& doc : docs) {
    if (!doc || doc.IsNull()) continue;
    TITAN_ASSIGN_OR_RETURN(json value, converter.Convert(doc, 1));
    out.push_back(std::move(value));
  }
  return out;
}

std::string JsonToYaml(const std::vector<json>& docs) {
  std::string text;
  for (size_t i = 0; i < docs.size(); ++i) {
    YAML::Emitter out;
    out.SetIndent(2);
    out.SetSeqFormat(YAML::Block);
    Emit(docs[i], out);
    if (i > 0) text += "---\n";
    text += out.c_str();
    text += "\n";
  }
  return text;
}

}  // namespace titan
