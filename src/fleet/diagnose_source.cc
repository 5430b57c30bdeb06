#include "src/fleet/diagnose_source.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/base/text.h"
#include "src/fleet/time_text.h"

namespace titan::fleet {

namespace {

using nlohmann::json;

bool ReadRootTime(const json& t, double* seconds) {
  if (t.is_string()) return ParseTimeSeconds(t.get<std::string>(), seconds);
  if (!t.is_number()) return false;
  double v = t.get<double>();
  if (!std::isfinite(v)) return false;
  if (std::fabs(v) > 1e17) {
    v /= 1e9;
  } else if (std::fabs(v) > 1e14) {
    v /= 1e6;
  }
  *seconds = v;
  return std::fabs(v) < 1e12;
}

std::string Text(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace

bool LooksLikeDiagnoseVerdict(std::string_view text) {
  text = Trim(text);
  if (text.empty() || text[0] != '{') return false;
  size_t key = text.find('"');
  if (key != std::string_view::npos && text.substr(key, 11) == "\"incidents\"") return true;
  // titan diagnose --json writes its keys sorted ("files" first) and names itself in "kind".
  for (size_t at = text.find("\"kind\""); at != std::string_view::npos;
       at = text.find("\"kind\"", at + 1)) {
    std::string_view rest = text.substr(at + 6);
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t\r\n")));
    if (rest.empty() || rest[0] != ':') continue;
    rest.remove_prefix(1);
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t\r\n")));
    if (rest.substr(0, 16) == "\"titan.diagnose\"") return true;
  }
  return false;
}

void ReadDiagnoseVerdict(std::string_view text, std::string_view source, HistoryBuilder* builder) {
  ReadStats& stats = builder->stats();
  const std::string where(source);
  if (Status depth = CheckJsonDepth(text, source); !depth.ok()) {
    stats.Skip("JSON nested too deep", where);
    return;
  }
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("incidents") || !doc["incidents"].is_array()) {
    stats.Skip("not a titan diagnose verdict (no incidents array)", where);
    return;
  }
  size_t i = 0;
  for (const json& inc : doc["incidents"]) {
    const std::string at = fmt::format("{}: incident {}", source, i++);
    if (!inc.is_object()) {
      stats.Skip("incident is not an object", at);
      continue;
    }
    auto culprit = inc.find("culprit");
    auto root = inc.find("root");
    std::string node =
        culprit != inc.end() && culprit->is_object() ? Text(*culprit, "node") : std::string();
    double time_seconds = 0;
    if (node.empty()) {
      stats.Skip("incident without a culprit node", at);
      continue;
    }
    if (root == inc.end() || !root->is_object() || !root->contains("time") ||
        !ReadRootTime((*root)["time"], &time_seconds)) {
      stats.Skip("incident without a readable root time", at);
      continue;
    }
    std::string cls = Text(inc, "class");
    std::string detail;  // "gpu G rank R: text", the parts the verdict names
    for (const char* part : {"gpu", "rank"}) {
      if (std::string v = Text(*culprit, part); !v.empty()) {
        detail += fmt::format("{}{} {}", detail.empty() ? "" : " ", part, v);
      }
    }
    detail += (detail.empty() ? "" : ": ") + Excerpt(Text(*root, "text"), 200);
    builder->Fail(node, time_seconds, cls.empty() ? "incident" : cls, std::move(detail));
  }
}

}  // namespace titan::fleet
