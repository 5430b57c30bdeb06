#include "src/fleet/run_log_source.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/base/text.h"

namespace titan::fleet {

namespace {

using nlohmann::json;

std::string_view FirstLine(std::string_view text) {
  while (!text.empty()) {
    std::string_view line = Trim(NextLine(&text));
    if (!line.empty()) return line;
  }
  return {};
}

std::string StringField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number() || it->is_boolean()) return it->dump();
  return "";
}

}  // namespace

bool LooksLikeRunLog(std::string_view text) {
  std::string_view line = FirstLine(text);
  if (line.empty() || line[0] != '{' || !CheckJsonDepth(line, "").ok()) return false;
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("time_ns") && j.contains("type");
}

void ReadRunLog(std::string_view text, std::string_view source, HistoryBuilder* builder) {
  ReadStats& stats = builder->stats();
  int64_t line_no = 0;
  while (!text.empty()) {
    std::string_view line = Trim(NextLine(&text));
    ++line_no;
    if (line.empty()) continue;
    auto where = [&] { return fmt::format("{}:{}", source, line_no); };
    if (!CheckJsonDepth(line, source).ok()) {
      stats.Skip("JSON nested too deep", where());
      continue;
    }
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
      stats.Skip("not a JSON object", where());
      continue;
    }
    auto t = j.find("time_ns");
    const std::string type = StringField(j, "type");
    const std::string node = StringField(j, "node");
    if (t == j.end() || !t->is_number() || type.empty()) {
      stats.Skip("no numeric time_ns or no type", where());
      continue;
    }
    const double time_seconds = t->get<double>() / 1e9;
    if (!(time_seconds > -1e12 && time_seconds < 1e12)) {
      stats.Skip("time_ns out of range", where());
      continue;
    }
    const std::string rank = StringField(j, "rank");
    if (type == "lost") {
      auto nodes = j.find("nodes");
      if (nodes == j.end() || !nodes->is_array()) {
        stats.Skip("lost without a nodes list", where());
        continue;
      }
      for (const json& n : *nodes) {
        if (n.is_string() && !n.get<std::string>().empty()) {
          builder->Fail(n.get<std::string>(), time_seconds, "lost",
                        "reported lost by " + node + ": " + StringField(j, "reason"));
        }
      }
      continue;
    }
    if (type != "start" && type != "crash" && type != "hang" && type != "exclude" &&
        type != "finish") {
      continue;
    }
    if (node.empty()) {
      stats.Skip("no node", where());
      continue;
    }
    if (type == "start") {
      Attributes a = {{"node_name", node}};
      std::string job = StringField(j, "job");
      if (!job.empty()) a.emplace_back("job", job);
      builder->Enter(node, time_seconds, std::move(a));
    } else if (type == "crash") {
      builder->Fail(node, time_seconds, "crash",
                    fmt::format("rank {} {}", rank, StringField(j, "status")));
    } else if (type == "hang") {
      builder->Fail(node, time_seconds, "hang",
                    fmt::format("rank {} silent {} s", rank, StringField(j, "silent_s")));
    } else {
      builder->Leave(
          node, time_seconds,
          (type == "exclude" ? "excluded: " : "job finished: ") + StringField(j, "reason"));
    }
  }
}

}  // namespace titan::fleet
