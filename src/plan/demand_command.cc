// `titan plan demand`: a forecast with prediction intervals, or its rolling-origin backtest.
#include "src/plan/demand_command.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "src/base/atomic_file.h"
#include "src/base/command_line.h"
#include "src/base/duration.h"
#include "src/base/duration_option.h"
#include "src/fleet/time_text.h"
#include "src/plan/backtest.h"
#include "src/plan/command_support.h"
#include "src/plan/demand.h"

namespace titan::plan {

namespace {

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError(errno, fmt::format("opening {}", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The series as CSV (step index, time, value) for other tools.
std::string SeriesCsv(const RegularSeries& s) {
  std::string out = "index,time,value\n";
  for (size_t i = 0; i < s.size(); ++i) {
    fmt::format_to(std::back_inserter(out), "{},{},{}\n", i, fleet::FormatTime(s.TimeAt(i)),
                   std::isnan(s.values[i]) ? std::string("NA") : fmt::format("{}", s.values[i]));
  }
  return out;
}

// --export DIR: what R's forecast and Prophet need to forecast on the same origins.
Status Export(const std::string& dir, const RegularSeries& s, const BacktestResult& r) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError(errno, fmt::format("creating {}", dir));
  }
  TITAN_RETURN_IF_ERROR(WriteFileAtomically(dir + "/series.csv", SeriesCsv(s)));
  // "key value..." lines: what R reads without a JSON package.
  std::string setup = fmt::format("steps_per_day {}\nstep_seconds {}\nhorizon {}\nlevels",
                                  r.season_steps, r.step_seconds, r.horizon_steps);
  for (double q : r.levels) setup += " " + LevelKey(q);
  setup += "\norigins";
  for (size_t o : r.origins) setup += fmt::format(" {}", o);
  return WriteFileAtomically(dir + "/setup.txt", setup + "\n");
}

}  // namespace

int DemandCommand(int argc, char** argv) {
  CLI::App app{
      "titan plan demand: forecast a demand series (GPUs, requests/s, tokens/s) with prediction\n"
      "intervals, or backtest the forecast on the series' own past.\n\n"
      "SERIES is a file (CSV time,value; JSON lines; a Prometheus range query's JSON; titan load\n"
      "--json or --timeline; a titan gateway access log; an Azure LLM trace) or a live Prometheus\n"
      "(http://host:9090 with --query), read in chunks of at most 11,000 points.\n\n"
      "Examples:\n"
      "  titan plan demand gpus.csv --horizon 30d\n"
      "  titan plan demand vc.csv --value running_gpu_num+pending_gpu_num --step 1h --horizon 30d\n"
      "  titan plan demand vc.csv --value running_gpu_num+pending_gpu_num --step 10m --horizon 1d "
      "--backtest\n"
      "  titan plan demand http://prom:9090 --query 'sum(rate(requests_total[5m]))' --horizon 7d\n"
      "  titan plan demand trace.csv --resolution 1m --step 1h --aggregate max --horizon 7d  "
      "# hourly peaks\n",
      "titan plan demand"};
  SeriesFlags series_flags;
  int64_t horizon_ns = 30 * kDayNs, min_train_ns = 0;
  std::string quantiles = "0.05,0.5,0.95,0.99", model = "titan", json_path, csv_path, export_dir;
  std::vector<std::string> compare;
  bool backtest = false;
  int origins = 16, threads = 2;
  app.add_option("series", series_flags.source, "The series (see above)")->required();
  AddSeriesFlags(app, &series_flags);
  AddDurationOption(app, "--horizon", &horizon_ns, "How far ahead to forecast", kSecondNs,
                    3650 * kDayNs);
  app.add_option("--quantiles", quantiles, "Quantile levels of the forecast");
  app.add_option("--model", model, "Forecast model: " + ForecasterNames());
  app.add_option("--json", json_path, "Write the forecast or backtest as JSON ('-': stdout)");
  app.add_option("--csv", csv_path, "Write the forecast per step as CSV ('-': stdout)");
  app.add_flag("--backtest", backtest,
               "Backtest instead: rolling origins, no look-ahead; MASE, sMAPE, pinball loss, "
               "coverage for titan's model and seasonal naive");
  app.add_option("--origins", origins, "Backtest origins (at least 14 recommended)")
      ->check(CLI::Range(1, 1000));
  AddDurationOption(app, "--min-train", &min_train_ns,
                    "Backtest: history before the first origin (default 15 days where the "
                    "series allows, else half of it)",
                    0, 3650 * kDayNs);
  app.add_option("--compare", compare,
                 "Backtest: also score forecasts made elsewhere on the same origins (CSV "
                 "model,origin,h,point,<level>...; bench/plan_r_forecast.R writes it)");
  app.add_option("--export", export_dir,
                 "Backtest: write the gridded series and the origins to DIR for other tools");
  app.add_option("--threads", threads, "Backtest: forecasts in parallel")
      ->check(CLI::Range(1, 256));
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;

  auto levels = ParseLevels(quantiles);
  if (!levels.ok()) return Fail(levels.status());
  auto series = LoadSeries(series_flags);
  if (!series.ok()) return Fail(series.status());
  const int64_t horizon_steps = std::max<int64_t>(1, horizon_ns / series_flags.step_ns);

  if (backtest) {
    BacktestOptions options;
    options.horizon_steps = horizon_steps;
    options.origins = origins;
    options.min_train_steps = min_train_ns / series_flags.step_ns;
    options.levels = *levels;
    options.threads = threads;
    if (model != "titan") options.models = {model, "seasonal_naive"};
    if (model == "seasonal_naive") options.models = {model};
    auto result = RunBacktest(*series, options);
    if (!result.ok()) return Fail(result.status());
    for (const std::string& path : compare) {
      auto text = ReadWholeFile(path);
      if (!text.ok()) return Fail(text.status());
      auto external = ReadExternalForecasts(*text, path);
      if (!external.ok()) return Fail(external.status());
      for (const auto& [name, forecasts] : *external) {
        if (Status s = ScoreExternal(*series, name, forecasts, &*result); !s.ok()) {
          return Fail(s.WithContext(path));
        }
      }
    }
    if (!export_dir.empty()) {
      if (Status s = Export(export_dir, *series, *result); !s.ok()) return Fail(s);
    }
    if (!json_path.empty()) {
      nlohmann::json out = BacktestJson(*result);
      if (Status s = WriteFileAtomically(json_path, out.dump(1) + "\n"); !s.ok()) return Fail(s);
    }
    if (json_path != "-") std::fputs(FormatBacktest(*result).c_str(), stdout);
    return 0;
  }

  auto forecaster = MakeForecaster(model);
  if (forecaster == nullptr) {
    return Fail(InvalidArgumentError(
        fmt::format("--model {}: no such model; the models are {}", model, ForecasterNames())));
  }
  auto forecast = forecaster->Predict(*series, horizon_steps, *levels);
  if (!forecast.ok()) return Fail(forecast.status());
  if (!json_path.empty()) {
    if (Status s = WriteFileAtomically(json_path, DemandJson(*series, *forecast).dump(1) + "\n");
        !s.ok()) {
      return Fail(s);
    }
  }
  if (!csv_path.empty()) {
    if (Status s = WriteFileAtomically(csv_path, ForecastCsv(*forecast)); !s.ok()) return Fail(s);
  }
  if (json_path != "-" && csv_path != "-") {
    std::fputs(FormatDemand(*series, *forecast).c_str(), stdout);
  }
  return 0;
}

}  // namespace titan::plan
