// `titan predict survival | risk | backtest | fit | convert`: thin wiring of flags to the
// predict library; all logic lives in survival_analysis, risk and backtest.
#include "src/predict/predict_command.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/base/atomic_file.h"
#include "src/base/command_failure.h"
#include "src/base/command_line.h"
#include "src/base/csv.h"
#include "src/base/duration_option.h"
#include "src/base/json_text.h"
#include "src/fleet/fleet_jsonl.h"
#include "src/fleet/read_history.h"
#include "src/fleet/time_text.h"
#include "src/predict/backtest.h"
#include "src/predict/features.h"
#include "src/predict/models.h"
#include "src/predict/risk.h"
#include "src/predict/survival_analysis.h"

namespace titan {
namespace {

int Fail(const Status& status) { return ReportCommandFailure("titan predict", status); }

Result<fleet::FleetHistory> LoadHistory(const std::vector<std::string>& paths) {
  auto h = fleet::ReadHistory(paths);
  if (h.ok() && !h->stats().skipped.empty()) {
    int64_t n = 0;
    for (const auto& [why, c] : h->stats().skipped) n += c;
    std::fprintf(stderr, "titan predict: skipped %ld records that could not be read, e.g. %s\n",
                 static_cast<long>(n), h->stats().examples.front().c_str());
  }
  return h;
}

const char kHistoryHelp[] =
    "Fleet history files or directories: fleet JSONL, Titan gc_full.csv, titan run event logs, "
    "titan diagnose verdicts, agent recorder CSV dumps (NODE=dump.csv)";

int Survival(int argc, char** argv) {
  CLI::App app{
      "titan predict survival: Kaplan-Meier curves by group (Greenwood variance, log-transformed\n"
      "95% intervals, as R's survfit), a Cox model on the grouping keys (Efron ties, (start, "
      "stop]\n"
      "records with delayed entry, robust variance clustered by component, as R's coxph),\n"
      "cumulative incidence per failure class (Aalen-Johansen) and fleet MTBF per period.\n\n"
      "Examples:\n"
      "  titan predict survival gc_full.csv --by cage\n"
      "  titan predict survival gc_full.csv --by cage --by node --mtbf-by batch --json out.json\n"
      "  titan predict survival fleet.jsonl --class DBE --records records.csv   # for R\n",
      "titan predict survival"};
  std::vector<std::string> paths, by, classes;
  std::string json_path, records_path, event = "first", period = "quarter", mtbf_by;
  app.add_option("history", paths, kHistoryHelp)->required();
  app.add_option("--by", by, "Group by this attribute (repeatable): KM per group, Cox terms");
  app.add_option("--class", classes, "Count only failures of this class (repeatable)");
  app.add_option("--event", event, "first: each component's first failure; all: every failure")
      ->check(CLI::IsMember({"first", "all"}));
  app.add_option("--period", period, "MTBF period")
      ->check(CLI::IsMember({"month", "quarter", "year"}));
  app.add_option("--mtbf-by", mtbf_by, "Split MTBF failures by this attribute (e.g. batch)");
  app.add_option("--json", json_path, "Write the whole analysis as JSON to FILE ('-': stdout)");
  app.add_option("--records", records_path,
                 "Write the counting-process records as CSV to FILE (for R: Surv(start_days, "
                 "stop_days, event))");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  predict::SurvivalOptions o;
  o.by = by;
  o.classes = classes;
  o.all_failures = event == "all";
  o.period = period == "month"  ? predict::Period::kMonth
             : period == "year" ? predict::Period::kYear
                                : predict::Period::kQuarter;
  o.mtbf_group = mtbf_by;
  auto history = LoadHistory(paths);
  if (!history.ok()) return Fail(history.status());
  if (!records_path.empty()) {
    auto csv = predict::SurvivalRecordsCsv(*history, o);
    if (!csv.ok()) return Fail(csv.status());
    if (Status s = WriteFileAtomically(records_path, *csv); !s.ok()) return Fail(s);
  }
  auto analysis = predict::AnalyseSurvival(*history, o);
  if (!analysis.ok()) return Fail(analysis.status());
  if (!json_path.empty()) {
    if (Status s = WriteFileAtomically(json_path, JsonText(*analysis) + "\n"); !s.ok())
      return Fail(s);
  }
  if (json_path != "-" && records_path != "-") {
    std::fputs(predict::FormatSurvival(*analysis).c_str(), stdout);
  }
  return 0;
}

// A CLI11 option for a time (calendar or epoch seconds).
CLI::Option* AddTimeOption(CLI::App& app, const std::string& name, double* seconds,
                           const std::string& help) {
  auto parse = [=](const std::string& text) {
    if (!fleet::ParseTimeSeconds(text, seconds)) {
      throw CLI::ValidationError(name, "'" + text +
                                           "': expected a UTC time such as 2017-01-01, "
                                           "2017-01-01T12:00:00Z, or epoch seconds");
    }
  };
  return app.add_option_function<std::string>(name, parse, help)->type_name("TIME");
}

constexpr int64_t kDayNs = int64_t{86400} * 1000000000;
constexpr int64_t kMaxSpanNs = int64_t{3650} * kDayNs;

int Risk(int argc, char** argv) {
  CLI::App app{
      "titan predict risk: each component's probability of failing within the horizon after\n"
      "TIME, from a model fitted only on what was known at TIME; ranked, with the features and\n"
      "recent events that raise it. Also each node's probability of any failure.\n\n"
      "Examples:\n"
      "  titan predict risk gc_full.csv --at 2017-06-01 --horizon 30d\n"
      "  titan predict risk fleet.jsonl run-logs/ --at 2026-12-01 --top 50 --json risk.json\n",
      "titan predict risk"};
  std::vector<std::string> paths;
  double at = 0;
  int64_t horizon_ns = 30 * kDayNs;
  std::string model, json_path;
  size_t top = 20;
  app.add_option("history", paths, kHistoryHelp)->required();
  AddTimeOption(app, "--at", &at, "Prediction time (UTC)")->required();
  AddDurationOption(app, "--horizon", &horizon_ns, "How far ahead", kDayNs / 24, kMaxSpanNs);
  app.add_option("--model", model, "Model (default: " + std::string(predict::kDefaultModel) + ")")
      ->check(CLI::IsMember(predict::ModelNames()));
  app.add_option("--top", top, "Components and nodes listed")->check(CLI::Range(1, 1000000));
  app.add_option("--json", json_path, "Write the ranking as JSON to FILE ('-': stdout)");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  auto history = LoadHistory(paths);
  if (!history.ok()) return Fail(history.status());
  predict::RiskOptions o;
  o.at_seconds = at;
  o.horizon_seconds = static_cast<double>(horizon_ns) / 1e9;
  o.model = model;
  o.top = top;
  auto risk = predict::PredictRisk(*history, o);
  if (!risk.ok()) return Fail(risk.status());
  if (!json_path.empty()) {
    if (Status s = WriteFileAtomically(json_path, JsonText(*risk) + "\n"); !s.ok()) return Fail(s);
  }
  if (json_path != "-") std::fputs(predict::FormatRisk(*risk).c_str(), stdout);
  return 0;
}

int Backtest(int argc, char** argv) {
  CLI::App app{
      "titan predict backtest: rolling-origin evaluation of every risk model from --split every\n"
      "--every, with no look-ahead (each model sees only what was known at each origin):\n"
      "Harrell's and Uno's concordance, cumulative/dynamic AUC and IPCW Brier score at the\n"
      "horizon, calibration slope, precision, recall and lift at the top 1/5/10%, per component\n"
      "and per node and slot, next to the baselines (repeat_offenders, kaplan_meier,\n"
      "cox_batch_age).\n\n"
      "Example:\n"
      "  titan predict backtest gc_full.csv --split 2017-01-01 --horizon 30d --every 15d "
      "--json bt.json\n",
      "titan predict backtest"};
  std::vector<std::string> paths, models;
  double split = 0;
  int64_t horizon_ns = 30 * kDayNs, every_ns = 15 * kDayNs, refit_ns = 180 * kDayNs;
  std::string json_path;
  app.add_option("history", paths, kHistoryHelp)->required();
  AddTimeOption(app, "--split", &split, "The first origin: models learn from what came before")
      ->required();
  AddDurationOption(app, "--horizon", &horizon_ns, "How far ahead each prediction looks",
                    kDayNs / 24, kMaxSpanNs);
  AddDurationOption(app, "--every", &every_ns, "Time between origins", kDayNs / 24, kMaxSpanNs);
  AddDurationOption(app, "--refit", &refit_ns, "Refit the models once this has passed", kDayNs / 24,
                    kMaxSpanNs);
  app.add_option("--model", models, "Only these models (repeatable; default all)")
      ->check(CLI::IsMember(predict::ModelNames()));
  app.add_option("--json", json_path, "Write the results as JSON to FILE ('-': stdout)");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  auto history = LoadHistory(paths);
  if (!history.ok()) return Fail(history.status());
  predict::BacktestOptions o;
  o.split_seconds = split;
  o.horizon_seconds = static_cast<double>(horizon_ns) / 1e9;
  o.every_seconds = static_cast<double>(every_ns) / 1e9;
  o.refit_seconds = static_cast<double>(refit_ns) / 1e9;
  o.models = models;
  auto bt = predict::RunBacktest(*history, o);
  if (!bt.ok()) return Fail(bt.status());
  if (!json_path.empty()) {
    if (Status s = WriteFileAtomically(json_path, JsonText(*bt) + "\n"); !s.ok()) return Fail(s);
  }
  if (json_path != "-") std::fputs(predict::FormatBacktest(*bt).c_str(), stdout);
  return 0;
}

// The landmark rows a backtest uses, as CSV, for models outside titan (bench/predict_lstm.py).
std::string LandmarksCsv(const fleet::FleetHistory& h, const predict::FeatureSpace& space,
                         const predict::Landmarks& l) {
  std::string out = "component,origin,follow_days,event,weight,node_name";
  for (const std::string& n : space.names) out += "," + CsvField(n);
  out += '\n';
  for (size_t i = 0; i < l.rows.size(); ++i) {
    const predict::LandmarkRow& r = l.rows[i];
    out += fmt::format(
        "{},{:.0f},{:.6f},{},{},{}", CsvField(h.components()[r.component].id), r.origin_seconds,
        r.follow_seconds / predict::kDaySeconds, r.event ? 1 : 0, r.weight,
        r.units[0] >= 0 && !l.unit_values.empty() ? CsvField(l.unit_values[0][r.units[0]]) : "");
    for (int c = 0; c < space.p(); ++c) out += fmt::format(",{}", l.x[i * space.p() + c]);
    out += '\n';
  }
  return out;
}

int Features(int argc, char** argv) {
  CLI::App app{
      "titan predict features: the landmark rows `titan predict backtest` fits and scores, as CSV\n"
      "(component, origin, follow_days, event, weight, node_name, then every feature), for\n"
      "models outside titan. DIR/train.csv: landmarks every horizon whose horizon ended by\n"
      "--split (every failure, --train-fraction of the rest, weighted); DIR/test.csv: every\n"
      "component in service at each origin from --split every --every.\n\n"
      "Example:\n"
      "  titan predict features gc_full.csv --split 2017-01-01 -o features/\n",
      "titan predict features"};
  std::vector<std::string> paths;
  double split = 0, fraction = 0.05;
  int64_t horizon_ns = 30 * kDayNs, every_ns = 15 * kDayNs;
  std::string dir;
  app.add_option("history", paths, kHistoryHelp)->required();
  AddTimeOption(app, "--split", &split, "The first test origin")->required();
  AddDurationOption(app, "--horizon", &horizon_ns, "Outcome horizon", kDayNs / 24, kMaxSpanNs);
  AddDurationOption(app, "--every", &every_ns, "Time between test origins", kDayNs / 24,
                    kMaxSpanNs);
  app.add_option("--train-fraction", fraction, "Share of non-failure training rows kept")
      ->check(CLI::Range(1e-4, 1.0));
  app.add_option("-o,--output", dir, "Directory for train.csv and test.csv")->required();
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  auto history = LoadHistory(paths);
  if (!history.ok()) return Fail(history.status());
  const double h = static_cast<double>(horizon_ns) / 1e9;
  predict::FeatureOptions fo;
  fo.horizon_seconds = h;
  const predict::FeatureSpace space = predict::FeatureSpace::Make(*history, fo);
  predict::LandmarkOptions train;
  train.origins_seconds = predict::TrainingOrigins(*history, split, h, split);
  train.non_event_fraction = fraction;
  predict::LandmarkOptions test;
  for (double t = split; t + h <= history->end_seconds();
       t += static_cast<double>(every_ns) / 1e9) {
    test.origins_seconds.push_back(t);
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Fail(ErrnoError(errno, "creating " + dir));
  }
  for (const auto& [name, opts] : {std::pair{"train.csv", train}, std::pair{"test.csv", test}}) {
    const predict::Landmarks l = predict::BuildLandmarks(*history, space, opts);
    if (Status s = WriteFileAtomically(dir + "/" + name, LandmarksCsv(*history, space, l));
        !s.ok()) {
      return Fail(s);
    }
    std::fprintf(stderr, "titan predict: %s: %zu rows\n", name, l.rows.size());
  }
  return 0;
}

int Convert(int argc, char** argv) {
  CLI::App app{
      "titan predict convert: read a fleet history from any format titan knows and write it as\n"
      "fleet JSONL (docs/predict.md), e.g. to merge sources or to hand it to titan plan.\n\n"
      "Example:\n"
      "  titan predict convert gc_full.csv run-logs/ -o fleet.jsonl\n",
      "titan predict convert"};
  std::vector<std::string> paths;
  std::string out = "-";
  app.add_option("history", paths, kHistoryHelp)->required();
  app.add_option("-o,--output", out, "Where to write the JSONL ('-': stdout)");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  auto history = LoadHistory(paths);
  if (!history.ok()) return Fail(history.status());
  if (Status s = WriteFileAtomically(out, fleet::WriteFleetJsonl(*history)); !s.ok())
    return Fail(s);
  return 0;
}

struct Sub {
  const char* name;
  const char* summary;
  int (*run)(int, char**);
};

constexpr Sub kSubs[] = {
    {"survival", "Kaplan-Meier, Cox, cumulative incidence and MTBF per period", Survival},
    {"risk", "each component's probability of failing within the horizon, ranked", Risk},
    {"backtest", "rolling-origin evaluation of the risk models and baselines", Backtest},
    {"features", "the backtest's landmark rows as CSV, for models outside titan", Features},
    {"convert", "write any history titan reads as fleet JSONL", Convert},
};

void Usage(FILE* out) {
  std::fprintf(out,
               "titan predict: failure risk per GPU and node from a fleet's own history\n\n"
               "usage: titan predict <command> HISTORY... [options]   (--help on each)\n\n");
  for (const Sub& s : kSubs) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
}

}  // namespace

int PredictCommand(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    Usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitUsageError : 0;
  }
  for (const Sub& s : kSubs) {
    if (std::string(argv[1]) == s.name) {
      std::string program = std::string("titan predict ") + s.name;
      argv[1] = program.data();
      return s.run(argc - 1, argv + 1);
    }
  }
  std::fprintf(stderr, "titan predict: unknown command '%s'\n\n", argv[1]);
  Usage(stderr);
  return kExitUsageError;
}

}  // namespace titan
