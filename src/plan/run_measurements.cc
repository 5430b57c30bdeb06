#include "src/plan/run_measurements.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/base/text.h"

namespace titan::plan {

namespace {

using nlohmann::json;

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

double NumberOr(const json& object, const char* key, double fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError(errno, fmt::format("opening {}", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Result<RunMeasurements> ParseRunFiles(std::string_view ledger_json, std::string_view events_jsonl,
                                      const std::string& source) {
  RunMeasurements m;
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(ledger_json, source + "/ledger.json"));
  const json ledger = json::parse(ledger_json, nullptr, /*allow_exceptions=*/false);
  if (!ledger.is_object() || !ledger.contains("ettr")) {
    return InvalidArgumentError(fmt::format(
        "{}/ledger.json is not titan run's ledger (no \"ettr\"; write it with --ledger-json)",
        source));
  }
  m.ettr = NumberOr(ledger, "ettr", 0);
  m.wall_seconds = NumberOr(ledger, "wall_seconds", 0);
  // Counts: a value out of int64's range (hostile or corrupt) is refused, not cast.
  for (auto [key, out] :
       {std::pair{"world_size", &m.world_size}, std::pair{"restarts", &m.restarts}}) {
    const double v = NumberOr(ledger, key, 0);
    if (!(v >= 0 && v <= 1e15)) {
      return InvalidArgumentError(fmt::format(
          "{}/ledger.json: \"{}\" is {}, not a count (0 to 1e15); is it titan run's ledger?",
          source, key, v));
    }
    *out = static_cast<int64_t>(v);
  }
  double startup = 0;
  if (auto it = ledger.find("seconds"); it != ledger.end() && it->is_object()) {
    startup = NumberOr(*it, "startup", 0);
  }
  std::vector<double> steps, stalls, writes, restarts;
  while (!events_jsonl.empty()) {
    const std::string_view line = Trim(NextLine(&events_jsonl));
    if (line.empty()) continue;
    if (CheckJsonDepth(line, source).ok() == false) {
      ++m.skipped_lines;
      continue;
    }
    const json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!e.is_object() || !e.contains("type") || !e["type"].is_string()) {
      ++m.skipped_lines;
      continue;
    }
    const std::string& type = e["type"].get_ref<const std::string&>();
    if (type == "steps") {
      // {"ranks": [{"rank": 0, "count": ..., "p50_ms": ...}, ...]} (src/supervisor/step_window.h)
      if (auto ranks = e.find("ranks"); ranks != e.end() && ranks->is_array()) {
        for (const json& window : *ranks) {
          if (window.is_object() && NumberOr(window, "p50_ms", 0) > 0) {
            steps.push_back(NumberOr(window, "p50_ms", 0) / 1e3);
          }
        }
      }
    } else if (type == "checkpoint" && NumberOr(e, "blocking_ms", -1) >= 0) {
      stalls.push_back(NumberOr(e, "blocking_ms", 0) / 1e3);
      if (e.contains("async") && e["async"].is_boolean() && e["async"].get<bool>()) {
        m.checkpoint_async = true;
      }
    } else if (type == "checkpoint_committed" && NumberOr(e, "background_ms", -1) >= 0) {
      writes.push_back(NumberOr(e, "background_ms", 0) / 1e3);
    } else if (type == "restart" && NumberOr(e, "detect_to_exec_ms", -1) >= 0) {
      restarts.push_back(NumberOr(e, "detect_to_exec_ms", 0) / 1e3);
    }
  }
  if (steps.empty()) {
    return InvalidArgumentError(fmt::format(
        "{}/events.jsonl has no step times (`steps` events: the workers report steps through "
        "titan.client); a plan needs the step time",
        source));
  }
  m.step_seconds = Median(steps);
  m.checkpoint_stall_seconds = Median(stalls);
  // A synchronous checkpoint writes while the training waits: its commit has no background part.
  m.checkpoint_write_seconds =
      m.checkpoint_async && !writes.empty() ? Median(writes) : m.checkpoint_stall_seconds;
  const double generations = static_cast<double>(m.restarts + 1);
  m.restart_seconds = restarts.empty() ? 0 : Median(restarts) + startup / generations;
  return m;
}

Result<RunMeasurements> ReadRunDirectory(const std::string& dir) {
  TITAN_ASSIGN_OR_RETURN(std::string ledger, ReadFile(dir + "/ledger.json"));
  TITAN_ASSIGN_OR_RETURN(std::string events, ReadFile(dir + "/events.jsonl"));
  return ParseRunFiles(ledger, events, dir);
}

}  // namespace titan::plan
