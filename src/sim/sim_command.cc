// `titan sim`: scenario (file or preset) + overrides -> Simulate / Sweep -> table, JSON or CSV.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/base/command_line.h"
#include "src/sim/presets.h"
#include "src/sim/report.h"
#include "src/sim/scenario_text.h"
#include "src/sim/sim_command.h"
#include "src/sim/simulate.h"

namespace titan {
namespace {

using sim::SweepRow;

// "key=value" -> (key, value); false if there is no '=' or either side is empty.
bool SplitAssignment(const std::string& text, std::string* key, std::string* value) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) return false;
  *key = text.substr(0, eq);
  *value = text.substr(eq + 1);
  return true;
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    if (end > start) parts.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

int Fail(const Status& status) {
  std::fprintf(stderr, "titan sim: %s\n", std::string(status.message()).c_str());
  return status.code() == StatusCode::kInvalidArgument || status.code() == StatusCode::kNotFound
             ? 2
             : 1;
}

}  // namespace

int SimCommand(int argc, char** argv) {
  CLI::App app{
      "titan sim: project failures, checkpoints, stragglers and communication of a training job\n"
      "to 10k-100k GPUs by discrete-event Monte Carlo simulation, next to Young's and Daly's\n"
      "formulas. SCENARIO is a YAML or JSON file or a preset (" +
          sim::PresetNames() +
          ").\n\n"
          "Examples:\n"
          "  titan sim llama3-16k\n"
          "  titan sim llama3-16k --sweep gpus=1024,4096,16384,65536\n"
          "  titan sim llama3-16k --set cluster.spares=8 --set checkpoint.interval=searched\n"
          "  titan sim my_cluster.yaml --json > result.json\n"
          "  titan sim --show llama3-16k > my_cluster.yaml   # start from a preset\n",
      "titan sim"};
  std::string scenario_arg, sweep, show;
  std::vector<std::string> sets;
  bool json = false, csv = false, list = false;
  int64_t replicas = 0, threads = -1, seed = -1;
  app.add_option("scenario", scenario_arg, "Scenario file (.yaml/.json) or preset name");
  app.add_flag("--json", json, "Print the summary as JSON");
  app.add_flag("--csv", csv, "Print the summary as CSV (one row per sweep point)");
  app.add_option("--set", sets, "Override a key, e.g. --set cluster.spares=16 (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--sweep", sweep,
                 "Run once per value: gpus=1024,4096 (spares scale along), spares=0,8,16, or any "
                 "dotted key, e.g. checkpoint.interval_minutes=10,20,40");
  app.add_option("--replicas", replicas, "Monte Carlo replicas (overrides run.replicas)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  app.add_option("--seed", seed, "Random seed (overrides run.seed)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 53));
  app.add_option("--threads", threads, "Threads for replicas; 0: all cores (overrides run.threads)")
      ->check(CLI::Range(int64_t{0}, int64_t{1024}));
  app.add_flag("--list-presets", list, "List the built-in scenarios");
  app.add_option("--show", show, "Print a preset's YAML (a starting point for your own file)");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  if (list) {
    std::printf("%s\n", sim::PresetNames().c_str());
    return 0;
  }
  if (!show.empty()) {
    const char* text = sim::FindPreset(show);
    if (text == nullptr) {
      std::fprintf(stderr, "titan sim: no preset '%s' (presets: %s)\n", show.c_str(),
                   sim::PresetNames().c_str());
      return 2;
    }
    std::fputs(text, stdout);
    return 0;
  }
  if (scenario_arg.empty()) {
    std::fprintf(stderr, "titan sim: give a SCENARIO (file or preset: %s); see --help\n",
                 sim::PresetNames().c_str());
    return 2;
  }
  if (json && csv) {
    std::fprintf(stderr, "titan sim: --json and --csv are exclusive\n");
    return 2;
  }
  Result<nlohmann::json> tree = sim::LoadScenarioTree(scenario_arg);
  if (!tree.ok()) return Fail(tree.status());
  for (const std::string& set : sets) {
    std::string key, value;
    if (!SplitAssignment(set, &key, &value)) {
      std::fprintf(stderr, "titan sim: --set '%s': expected KEY=VALUE\n", set.c_str());
      return 2;
    }
    if (Status status = sim::SetTreePath(&*tree, key, value); !status.ok()) return Fail(status);
  }
  if (replicas > 0) (void)sim::SetTreePath(&*tree, "run.replicas", std::to_string(replicas));
  if (seed >= 0) (void)sim::SetTreePath(&*tree, "run.seed", std::to_string(seed));
  if (threads >= 0) (void)sim::SetTreePath(&*tree, "run.threads", std::to_string(threads));

  std::string key;
  std::vector<SweepRow> rows;
  if (!sweep.empty()) {
    std::string values;
    if (!SplitAssignment(sweep, &key, &values) || SplitCommas(values).empty()) {
      std::fprintf(stderr, "titan sim: --sweep '%s': expected KEY=V1,V2,...\n", sweep.c_str());
      return 2;
    }
    Result<std::vector<SweepRow>> swept = sim::Sweep(*tree, key, SplitCommas(values));
    if (!swept.ok()) return Fail(swept.status());
    rows = *std::move(swept);
  } else {
    Result<sim::Scenario> scenario = sim::ParseScenario(*tree);
    if (!scenario.ok()) return Fail(scenario.status());
    Result<sim::SimSummary> summary = sim::Simulate(*scenario);
    if (!summary.ok()) return Fail(summary.status());
    rows.push_back({"", *std::move(summary)});
  }

  if (json) {
    const nlohmann::json out =
        key.empty() ? sim::SummaryJson(rows.front().summary) : sim::SweepJson(key, rows);
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (csv) {
    std::fputs(sim::FormatCsv(key, rows).c_str(), stdout);
  } else if (key.empty()) {
    std::fputs(sim::FormatTable(rows.front().summary).c_str(), stdout);
  } else {
    std::fputs(sim::FormatSweepTable(key, rows).c_str(), stdout);
  }
  return 0;
}

}  // namespace titan
