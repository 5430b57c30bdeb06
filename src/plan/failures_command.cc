// `titan plan failures`: a fleet history's failure rates, repair times and projected failures
// with overdispersed intervals, and the rolling backtest of that projection.
#include "src/plan/failures_command.h"

#include <cmath>

#include <fmt/format.h>

#include "src/base/atomic_file.h"
#include "src/base/command_line.h"
#include "src/base/duration_option.h"
#include "src/fleet/read_history.h"
#include "src/fleet/time_text.h"
#include "src/plan/command_support.h"
#include "src/plan/failure_fit.h"

namespace titan::plan {

Result<fleet::FleetHistory> LoadFleetHistory(const std::vector<std::string>& paths) {
  auto history = fleet::ReadHistory(paths);
  if (history.ok() && !history->stats().skipped.empty()) {
    int64_t n = 0;
    for (const auto& [why, count] : history->stats().skipped) n += count;
    std::fprintf(stderr, "titan plan: skipped %lld records that could not be read, e.g. %s\n",
                 static_cast<long long>(n), history->stats().examples.front().c_str());
  }
  return history;
}

std::string FormatFit(const FailureFit& fit) {
  std::string out = fmt::format(
      "window    {} .. {}: {:.4g} component-days in service, {:.0f} in service at its end\n",
      fleet::FormatTime(fit.window_begin_seconds), fleet::FormatTime(fit.window_end_seconds),
      fit.component_days, fit.in_service);
  int64_t failures = 0;
  for (const ClassRate& c : fit.classes) failures += c.failures;
  out += fmt::format("failures  {} ({:.4g} per 1,000 component-days)", failures,
                     1000 * fit.per_component_day);
  for (const ClassRate& c : fit.classes) {
    out += fmt::format("; {} {} ({:.4g}{})", c.name, c.failures, 1000 * c.per_component_day,
                       c.needs_repair ? "" : ", restart only");
  }
  out += "\n";
  out += fit.repairs_measured > 0
             ? fmt::format("repairs   {} measured: mean {:.1f} h, median {:.1f} h\n",
                           fit.repairs_measured, fit.repair_mean_hours, fit.repair_median_hours)
             : "repairs   none measured (no repair records, no refilled node_name)\n";
  out += std::isinf(fit.dispersion_k)
             ? fmt::format(
                   "variation Poisson: {} past 30-day projections missed no more than "
                   "a Poisson count would\n",
                   fit.dispersion_origins)
             : fmt::format(
                   "variation negative binomial k {:.3g}, from {} past 30-day "
                   "projections (a Poisson would be k infinite)\n",
                   fit.dispersion_k, fit.dispersion_origins);
  return out;
}

int FailuresCommand(int argc, char** argv) {
  CLI::App app{
      "titan plan failures: a fleet's failure rate per component-day by class, repair times,\n"
      "and its failures projected over the next days with negative binomial (overdispersed)\n"
      "90% intervals; --backtest checks the projection at rolling origins of the history.\n\n"
      "Examples:\n"
      "  titan plan failures gc_full.csv\n"
      "  titan plan failures gc_full.csv --backtest --horizon 30d --horizon 90d\n",
      "titan plan failures"};
  std::vector<std::string> paths, restart_only;
  std::vector<std::string> horizons = {"30d", "90d"};
  int64_t window_ns = 90 * kDayNs, every_ns = 30 * kDayNs;
  std::string at, json_path;
  bool backtest = false;
  app.add_option("history", paths,
                 "Fleet history files or directories (titan predict's formats: fleet JSONL, "
                 "Titan gc_full.csv, titan run event logs, ...)")
      ->required();
  AddDurationOption(app, "--fit-window", &window_ns, "The rate's window before --at", kDayNs,
                    3650 * kDayNs);
  app.add_option("--at", at, "Fit at this time (default: the history's end)");
  app.add_option("--horizon", horizons, "Project the failures over these spans (repeatable)");
  app.add_option("--restart-only", restart_only,
                 "Failure classes that need a restart but no repair (software)");
  app.add_flag("--backtest", backtest, "Rolling-origin check of the projection's intervals");
  AddDurationOption(app, "--every", &every_ns, "Backtest: days between origins", kDayNs,
                    3650 * kDayNs);
  app.add_option("--json", json_path, "Write the result as JSON ('-': stdout)");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;

  std::vector<double> horizon_days;
  for (const std::string& h : horizons) {
    int64_t ns = 0;
    if (!ParseDurationNs(h, &ns) || ns < kDayNs) {
      return Fail(InvalidArgumentError(
          fmt::format("--horizon {}: expected a duration of at least a day (30d)", h)));
    }
    horizon_days.push_back(static_cast<double>(ns / kDayNs));
  }
  auto history = LoadFleetHistory(paths);
  if (!history.ok()) return Fail(history.status());
  const FailureCounts counts(*history);
  FitOptions options;
  options.window_days = static_cast<double>(window_ns / kDayNs);
  options.restart_only = restart_only;
  if (!at.empty() && !fleet::ParseTimeSeconds(at, &options.at_seconds)) {
    return Fail(
        InvalidArgumentError(fmt::format("--at '{}': expected a UTC time or epoch seconds", at)));
  }
  auto fit = FitFailures(*history, counts, options);
  if (!fit.ok()) return Fail(fit.status());
  nlohmann::json out = {{"kind", "titan.plan.failures"}, {"fit", FailureFitJson(*fit)}};
  std::string text = FormatFit(*fit);
  nlohmann::json projections = nlohmann::json::array();
  for (double days : horizon_days) {
    const double mu = fit->per_component_day * fit->in_service * days;
    const int64_t lo = NegativeBinomialQuantile(mu, fit->dispersion_k, 0.05);
    const int64_t hi = NegativeBinomialQuantile(mu, fit->dispersion_k, 0.95);
    text += fmt::format(
        "next {:>3.0f} d {:.1f} failures expected, 90% interval [{}, {}] "
        "(a Poisson would say [{}, {}])\n",
        days, mu, lo, hi, NegativeBinomialQuantile(mu, INFINITY, 0.05),
        NegativeBinomialQuantile(mu, INFINITY, 0.95));
    projections.push_back({{"days", days}, {"expected", mu}, {"low", lo}, {"high", hi}});
  }
  out["projections"] = projections;
  if (backtest) {
    nlohmann::json checks = nlohmann::json::array();
    text += fmt::format(
        "\nbacktest  origins every {} d; the rate over the {} d before each origin, k fitted on "
        "that origin's past projections only\n",
        every_ns / kDayNs, window_ns / kDayNs);
    text += fmt::format("  {:>8} {:>8} {:>18} {:>22}\n", "horizon", "origins", "in NB 90% interval",
                        "in Poisson 90% interval");
    for (double days : horizon_days) {
      const ProjectionBacktest b = BacktestProjection(counts, options.window_days, days,
                                                      static_cast<double>(every_ns / kDayNs));
      text += fmt::format("  {:>6.0f} d {:>8} {:>17.1f}% {:>21.1f}%\n", days, b.checks.size(),
                          100 * b.coverage, 100 * b.poisson_coverage);
      checks.push_back(ProjectionBacktestJson(b));
    }
    out["backtest"] = checks;
  }
  if (!json_path.empty()) {
    if (Status s = WriteFileAtomically(json_path, out.dump(1) + "\n"); !s.ok()) return Fail(s);
  }
  if (json_path != "-") std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace titan::plan
