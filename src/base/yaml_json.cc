#include "src/base/yaml_json.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <sstream>

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

// Sees the parser's events and keeps none: for counting documents.
class IgnoreEvents final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
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

// yaml-cpp 0.7 (Debian bookworm) has LoadAll loop forever, allocating, when its parser reports
// a document without consuming a token: ",x", "\"a\", b", "---\n,x" (yaml-cpp issues #1040
// and #1319, fixed in 0.8; found here by fuzzing). A first pass counts the documents through
// the event API, which keeps nothing, and stops at a count no real stream reaches: one more
// than its "---" and "..." lines.
Status CheckYamlStream(std::string_view text, std::string_view origin) {
  size_t markers = 0;
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, 3) == "---" || text.substr(pos, 3) == "...") ++markers;
    const size_t newline = text.find('\n', pos);
    if (newline == std::string_view::npos) break;
    pos = newline + 1;
  }
  std::istringstream in{std::string(text)};
  try {
    YAML::Parser parser(in);
    IgnoreEvents ignore;
    for (size_t documents = 0; parser.HandleNextDocument(ignore);) {
      if (++documents > markers + 1) {
        return InvalidArgumentError(fmt::format(
            "{}: not valid YAML: the parser makes no progress after document {} (a ',' where a "
            "document should start?)",
            origin, markers + 1));
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("{}: not valid YAML at line {}, column {}: {}", origin,
                                            e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("{}: YAML: {}", origin, e.what()));
  }
  return OkStatus();
}

Result<std::vector<json>> YamlToJson(std::string_view text, std::string_view origin,
                                     YamlLimits limits) {
  TITAN_RETURN_IF_ERROR(CheckYamlStream(text, origin));
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(fmt::format("{}: not valid YAML at line {}, column {}: {}", origin,
                                            e.mark.line + 1, e.mark.column + 1, e.msg));
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
