#include "src/report/input.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "src/base/env.h"
#include "src/base/json_depth.h"
#include "src/base/text.h"

namespace titan::report {

namespace {

using nlohmann::json;

constexpr std::string_view kExpected =
    "expected the JSON of `titan load --json`, `titan load sweep --json`, `titan trace analyze "
    "--json`, `titan sim --json`, a `titan run` event log (events.jsonl) or ledger "
    "(ledger.json), a `titan gateway` event log, a `titan agent` recorder dump, `titan "
    "predict survival|risk|backtest --json`, `titan diagnose --json` or `titan plan "
    "demand|training|serving|failures --json`";

bool IsAgentDump(const json& doc) {
  const auto it = doc.find("traceEvents");
  if (it == doc.end() || !it->is_array()) return false;
  size_t looked = 0;
  for (const json& e : *it) {
    if (++looked > 16) break;  // the agent writes its process names first
    if (!e.is_object()) continue;
    const auto args = e.find("args");
    if (e.value("ph", "") == "M" && args != e.end() && args->is_object() &&
        args->value("name", "") == "titan agent: signals") {
      return true;
    }
  }
  return false;
}

std::string KeysOf(const json& doc) {
  if (!doc.is_object()) return doc.is_array() ? "a JSON array" : "a JSON scalar";
  std::string keys;
  size_t n = 0;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (n++ == 8) {
      keys += ", ...";
      break;
    }
    keys += (keys.empty() ? "" : ", ") + it.key();
  }
  return fmt::format("a JSON object with keys [{}]", keys);
}

Result<InputKind> Classify(const std::string& path, const json& doc) {
  if (doc.is_object()) {
    const std::string kind =
        doc.value("kind", json()).is_string() ? doc["kind"].get<std::string>() : "";
    if (kind == "titan.load.run") return InputKind::kLoadRun;
    if (kind == "titan.load.sweep") return InputKind::kLoadSweep;
    if (kind == "titan.diagnose") return InputKind::kDiagnosis;
    if (kind == "titan.plan.demand" || kind == "titan.plan.backtest" ||
        kind == "titan.plan.training" || kind == "titan.plan.serving" ||
        kind == "titan.plan.failures") {
      return InputKind::kPlan;
    }
    if (!kind.empty() && kind.starts_with("titan.")) {
      return InvalidArgumentError(
          fmt::format("{}: a titan result of kind \"{}\" that this titan report does not draw; {}",
                      path, kind, kExpected));
    }
    if (doc.contains("ranks") && doc.contains("cross_rank")) return InputKind::kTraceAnalysis;
    if (doc.contains("rows") && doc["rows"].is_array() && !doc["rows"].empty() &&
        doc["rows"][0].is_object() && doc["rows"][0].contains("ettr")) {
      return InputKind::kSim;
    }
    if (doc.contains("ettr") && doc.contains("analytic_ettr")) return InputKind::kSim;
    if (doc.contains("ettr") && doc.contains("seconds") && doc.contains("job")) {
      return InputKind::kRunLedger;
    }
    if (IsAgentDump(doc)) return InputKind::kAgentDump;
    if ((doc.contains("kaplan_meier") && doc.contains("mtbf")) ||
        (doc.contains("default_model") && doc.contains("models")) ||
        (doc.contains("components") && doc.contains("expected_failures"))) {
      return InputKind::kPredict;
    }
  }
  return InvalidArgumentError(
      fmt::format("{}: not a titan result: {}; found {}", path, kExpected, KeysOf(doc)));
}

// A titan run event log: one JSON object per line, each with "type" and "time_ns".
Result<json> ParseEventLines(const std::string& path, std::string_view content) {
  json lines = json::array();
  size_t number = 0;
  while (!content.empty()) {
    std::string_view line = Trim(NextLine(&content));
    ++number;
    if (line.empty()) continue;
    json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (e.is_discarded()) {
      // A run killed mid-write leaves a partial last line: say so rather than drop events.
      return InvalidArgumentError(fmt::format(
          "{}:{}: not a JSON object on this line of a titan run event log{}", path, number,
          content.empty() ? " (the last line is cut: was the run killed while writing?)" : ""));
    }
    if (!e.is_object() || !e.contains("type") || !e.contains("time_ns")) {
      return InvalidArgumentError(fmt::format(
          "{}:{}: expected a titan run event ({{\"type\":...,\"time_ns\":...}}), found {}", path,
          number, KeysOf(e)));
    }
    lines.push_back(std::move(e));
  }
  return lines;
}

bool LooksLikeEventLines(std::string_view content) {
  std::string_view rest = content;
  std::string_view first = Trim(NextLine(&rest));
  if (first.empty() || first.front() != '{' || rest.empty()) return false;
  return first.find("\"type\"") != std::string_view::npos &&
         first.find("\"time_ns\"") != std::string_view::npos;
}

}  // namespace

std::string_view InputKindName(InputKind kind) {
  switch (kind) {
    case InputKind::kLoadRun:
      return "load run";
    case InputKind::kLoadSweep:
      return "load sweep";
    case InputKind::kTraceAnalysis:
      return "trace analysis";
    case InputKind::kSim:
      return "sim";
    case InputKind::kRunEvents:
      return "run event log";
    case InputKind::kRunLedger:
      return "run ledger";
    case InputKind::kAgentDump:
      return "agent dump";
    case InputKind::kGatewayEvents:
      return "gateway event log";
    case InputKind::kPredict:
      return "predict";
    case InputKind::kDiagnosis:
      return "diagnosis";
    case InputKind::kPlan:
      return "plan";
  }
  return "unknown";
}

Result<Input> Recognise(const std::string& path, std::string_view content) {
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(content, path));
  if (LooksLikeEventLines(content)) {
    TITAN_ASSIGN_OR_RETURN(json lines, ParseEventLines(path, content));
    // titan gateway writes the same event-log format; its "start" says how it routes.
    const bool gateway = std::any_of(lines.begin(), lines.end(), [](const json& e) {
      return e.value("type", json()) == "start" && e.contains("routing");
    });
    return Input{path, gateway ? InputKind::kGatewayEvents : InputKind::kRunEvents,
                 std::move(lines)};
  }
  json doc;
  try {
    doc = json::parse(content);
  } catch (const json::parse_error& e) {
    const bool at_end = e.byte >= content.size();
    return InvalidArgumentError(fmt::format(
        "{}: invalid JSON at byte {}{}; {}", path, e.byte,
        at_end ? " (the file ends early: truncated, or still being written?)" : "", kExpected));
  } catch (const json::exception& e) {  // a number beyond a double's range: out_of_range
    return InvalidArgumentError(
        fmt::format("{}: unreadable JSON: {}; {}", path, e.what(), kExpected));
  }
  TITAN_ASSIGN_OR_RETURN(InputKind kind, Classify(path, doc));
  return Input{path, kind, std::move(doc)};
}

Result<Input> ReadInput(const std::string& path) {
  TITAN_ASSIGN_OR_RETURN(std::string content, Env::ReadFile(path, kMaxInputBytes));
  return Recognise(path, content);
}

Result<std::vector<Input>> ReadDirectory(const std::string& dir,
                                         std::vector<std::string>* skipped) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) return NotFoundError(fmt::format("{}: cannot list: {}", dir, ec.message()));
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return UnavailableError(fmt::format("{}: cannot list: {}", dir, ec.message()));
    if (it.depth() >= 4) it.disable_recursion_pending();
    const fs::path& p = it->path();
    const std::string ext = p.extension().string();
    if (it->is_regular_file(ec) && (ext == ".json" || ext == ".jsonl")) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  std::vector<Input> inputs;
  for (const std::string& file : files) {
    TITAN_ASSIGN_OR_RETURN(std::string content, Env::ReadFile(file, kMaxInputBytes));
    Result<Input> input = Recognise(file, content);
    if (input.ok()) {
      inputs.push_back(std::move(input).value());
    } else if (skipped != nullptr) {
      skipped->push_back(file);
    }
  }
  return inputs;
}

}  // namespace titan::report
