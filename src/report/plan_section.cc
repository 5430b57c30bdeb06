// Report sections for `titan plan ... --json` (docs/plan.md), one per kind:
//  - titan.plan.demand: the history and the forecast with its prediction intervals;
//  - titan.plan.backtest: every model's scores, and the calibration of its quantiles;
//  - titan.plan.training: the plan, and every candidate simulated on the way to it;
//  - titan.plan.serving: replicas per step against the forecast peak they must serve;
//  - titan.plan.failures: the fitted fleet, its projections, and their backtest.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "src/base/duration.h"
#include "src/report/fields.h"
#include "src/report/sections.h"

namespace titan::report {

namespace {

using nlohmann::json;

// The quantile levels of a {"0.05": ..., "0.95": ...} object, ascending.
std::vector<std::pair<double, std::string>> QuantileLevels(const Fields& by_quantile) {
  std::vector<std::pair<double, std::string>> levels;
  for (const auto& [key, value] : by_quantile.json().items()) {
    char* end = nullptr;
    const double q = std::strtod(key.c_str(), &end);
    if (end != key.c_str() && *end == '\0' && q > 0 && q < 1) levels.emplace_back(q, key);
  }
  std::sort(levels.begin(), levels.end());
  return levels;
}

// A horizon or step in the duration syntax of titan's flags: "30d", "1h", "10m" (whole days
// as days: FormatDuration stops at hours).
std::string Duration(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0 || seconds >= 9e9) return "?";
  const double days = seconds / 86400;
  if (days >= 1 && days == std::floor(days)) return fmt::format("{:.0f}d", days);
  return FormatDuration(std::llround(seconds * 1e9));
}

// The band drawn: the lowest quantile and its mirror (0.05 and 0.95) where both were asked,
// else the lowest and the highest. Indices into `levels`; none with fewer than two levels.
std::optional<std::pair<size_t, size_t>> Band(
    const std::vector<std::pair<double, std::string>>& levels) {
  if (levels.size() < 2 || levels.front().first >= 0.5) return std::nullopt;
  for (size_t i = levels.size() - 1; i > 0; --i) {
    if (std::fabs(levels[i].first - (1 - levels.front().first)) < 1e-9) return std::pair{0, i};
  }
  return std::pair<size_t, size_t>{0, levels.size() - 1};
}

void AddDemandForecast(const Fields& doc, Section* section) {
  const Fields series = doc.Object("series");
  const Fields forecast = doc.Object("forecast");
  const json& history = series.Array("values");
  const json& point = forecast.Array("point");
  const Fields quantiles = forecast.Object("quantiles");
  const auto levels = QuantileLevels(quantiles);
  const double history_start = series.Num("start"), history_step = series.Num("step_seconds");
  const double start = forecast.Num("start"), step = forecast.Num("step_seconds");
  const std::string unit = series.StrOr("unit", "");
  section->Stats({{"series", series.Str("name")},
                  {"model", forecast.Str("model")},
                  {"horizon", Duration(step * static_cast<double>(point.size()))},
                  {"step", Duration(step)}});
  section->Text(forecast.StrOr("description", ""));

  const auto band = Band(levels);
  Plot plot{"Demand: history and forecast",
            band ? fmt::format("the band spans the {} to {} quantiles of the forecast",
                               levels[band->first].second, levels[band->second].second)
                 : "the forecast's point values",
            {"time", "", false, true},
            {series.Str("name"), unit}};
  plot.series = {{"history", unit}, {"forecast", unit, "line", "", true}};
  for (const auto& [q, key] : levels) plot.series.push_back({"q" + key, unit, "line", "", true});
  plot.ys.assign(plot.series.size(), {});
  auto row = [&](double t, double h, double p, const std::vector<double>& qs) {
    if (!std::isfinite(t) || (!plot.xs.empty() && t <= plot.xs.back())) return;  // x ascends
    plot.xs.push_back(t);
    plot.ys[0].push_back(h);
    plot.ys[1].push_back(p);
    for (size_t i = 0; i < qs.size(); ++i) plot.ys[2 + i].push_back(qs[i]);
  };
  const std::vector<double> none(levels.size(), kNaN);
  for (size_t i = 0; i < history.size(); ++i) {
    row(history_start + history_step * static_cast<double>(i), NumOrNaN(history[i]), kNaN, none);
  }
  std::vector<double> qs(levels.size());
  for (size_t i = 0; i < point.size(); ++i) {
    const double t = start + step * static_cast<double>(i);
    for (size_t k = 0; k < levels.size(); ++k) {
      const json& values = quantiles.Array(levels[k].second);
      qs[k] = i < values.size() ? NumOrNaN(values[i]) : kNaN;
    }
    row(t, kNaN, NumOrNaN(point[i]), qs);
  }
  if (band)
    plot.bands.emplace_back(static_cast<int>(2 + band->second), static_cast<int>(2 + band->first));
  plot.marks.push_back({start, std::nullopt, "forecast from here", "info"});
  section->Add(std::move(plot));
}

void AddForecastBacktest(const Fields& doc, Section* section) {
  const std::string best = doc.Str("default_model");
  const Fields models = doc.Object("models");
  const double step = doc.Num("step_seconds");
  section->Stats({{"default model", best},
                  {"origins", static_cast<int64_t>(doc.Array("origins").size())},
                  {"horizon", Duration(step * static_cast<double>(doc.Int("horizon_steps")))},
                  {"step", Duration(step)}});
  section->Text(doc.StrOr("mase_scale", ""));
  Table table{"Rolling-origin backtest",
              "MASE and sMAPE of the point forecast; pinball loss per quantile in the series' "
              "unit; coverage: share of actual values inside the 5%-95% band",
              {"model", "MASE", "sMAPE %"},
              {}};
  std::vector<std::pair<double, std::string>> levels;
  for (const auto& [name, m] : models.json().items()) {
    levels = QuantileLevels(Fields(m, models.where() + "." + name).Object("pinball"));
    break;
  }
  for (const auto& [q, key] : levels) table.columns.push_back("pinball " + key);
  table.columns.insert(table.columns.end(),
                       {"coverage 90%", "s per forecast", "at the last origin"});

  Plot calibration{"Calibration of the quantiles",
                   "share of actual values below each forecast quantile; the diagonal is perfect",
                   {"quantile", ""},
                   {"share below", "fraction"}};
  calibration.x.min = 0;
  calibration.x.max = 1;
  calibration.y.min = 0;
  calibration.y.max = 1;
  calibration.xs = {0};
  for (const auto& [q, key] : levels) calibration.xs.push_back(q);
  calibration.xs.push_back(1);
  calibration.series.push_back({"perfect", "fraction", "line", "#999999", true});
  calibration.ys.push_back(calibration.xs);

  for (const auto& [name, m] : models.json().items()) {
    const Fields f(m, models.where() + "." + name);
    std::vector<json> cells = {name == best ? name + " (default)" : name, f.Num("mase"),
                               f.Num("smape")};
    const Fields pinball = f.Object("pinball");
    for (const auto& [q, key] : levels) cells.push_back(pinball.NumOr(key, kNaN));
    cells.push_back(f.Object("coverage").NumOr("0.9", kNaN));
    cells.push_back(f.NumOr("seconds_per_forecast", kNaN));
    cells.push_back(f.StrOr("note", ""));
    table.rows.push_back(std::move(cells));
    if (!f.Has("calibration")) continue;
    const Fields cal = f.Object("calibration");
    std::vector<double> ys = {kNaN};
    for (const auto& [q, key] : levels) ys.push_back(cal.NumOr(key, kNaN));
    ys.push_back(kNaN);
    calibration.series.push_back({name, "fraction", "points"});
    calibration.ys.push_back(std::move(ys));
  }
  section->Add(std::move(table));
  if (calibration.series.size() > 1) section->Add(std::move(calibration));
}

std::vector<json> TrainingCandidateRow(const Fields& c) {
  const Fields ettr = c.Object("ettr");
  return {c.Int("gpus"),
          c.Int("spare_nodes"),
          c.Num("checkpoint_interval_seconds") / 60,
          c.Num("probability"),
          c.Num("wall_days_mean"),
          c.Num("wall_days_at_probability"),
          ettr.Num("mean"),
          fmt::format("{:.3f} .. {:.3f}", ettr.Num("p5"), ettr.Num("p95")),
          c.NumOr("cost_at_probability", kNaN),
          c.StrOr("stage", "")};
}

void AddTrainingPlan(const Fields& doc, Section* section) {
  const Fields plan = doc.Object("plan");
  const Fields ettr = plan.Object("ettr");
  const bool feasible = doc.Bool("feasible");
  std::vector<Stat> stats = {
      {"GPUs", plan.Int("gpus")},
      {"spare nodes", plan.Int("spare_nodes")},
      {"checkpoint every", fmt::format("{:.1f} min", plan.Num("checkpoint_interval_seconds") / 60)},
      {"P(deadline)", plan.Num("probability"), feasible ? "ok" : "bad"},
      {"deadline days", doc.Num("deadline_days")},
      {"ETTR", ettr.Num("mean")}};
  if (plan.Has("cost_at_probability")) {  // with --price
    stats.push_back({"cost at P", plan.Num("cost_at_probability")});
  }
  section->Stats(std::move(stats));
  if (!feasible) {
    section->Text(
        "no candidate meets the deadline with the asked probability: the plan shown is "
        "the best found",
        "bad");
  }
  const Fields fleet = doc.Object("fleet");
  section->Text(
      fmt::format("fleet: {:.4g} node failures per day, repair {:.4g} h, dispersion k "
                  "{:.3g} ({})",
                  doc.Num("node_failures_per_day"), fleet.Num("repair_hours"),
                  fleet.NumOr("dispersion_k", kNaN), fleet.StrOr("source", "")));
  const json& evaluated = doc.Array("evaluated");
  std::vector<const json*> order;
  for (const json& c : evaluated) order.push_back(&c);
  std::sort(order.begin(), order.end(), [](const json* a, const json* b) {
    return NumOrNaN(a->value("gpus", json())) < NumOrNaN(b->value("gpus", json()));
  });
  Plot plot{"Candidates simulated",
            fmt::format("each a number of GPUs (with its best checkpoint interval and spares), "
                        "simulated by titan sim; the target is P >= {}",
                        doc.Num("probability_target")),
            {"GPUs", ""},
            {"P(deadline)", "fraction"}};
  plot.y.min = 0;
  plot.y.max = 1;
  plot.y2 = Axis{"ETTR", "fraction"};
  plot.series = {{"P(deadline)", "fraction", "points"},
                 {"ETTR", "fraction", "points", "", false, true}};
  plot.ys.assign(2, {});
  plot.hlines.push_back({doc.Num("probability_target"), "target", "warn"});
  Table table{"Candidates",
              "",
              {"GPUs", "spare nodes", "checkpoint min", "P(deadline)", "days mean", "days at P",
               "ETTR", "ETTR 5%..95%", "cost at P", "stage"},
              {}};
  for (const json* c : order) {
    const Fields f(*c, doc.where() + ".evaluated[]");
    const double gpus = static_cast<double>(f.Int("gpus"));
    if (!plot.xs.empty() && gpus == plot.xs.back()) {
      // Several checkpoint intervals tried at one size: the plot keeps the best.
      plot.ys[0].back() = std::max(plot.ys[0].back(), f.Num("probability"));
    } else {
      plot.xs.push_back(gpus);
      plot.ys[0].push_back(f.Num("probability"));
      plot.ys[1].push_back(f.Object("ettr").Num("mean"));
    }
    table.rows.push_back(TrainingCandidateRow(f));
  }
  section->Add(std::move(plot));
  section->Add(std::move(table));
}

void AddServingPlan(const Fields& doc, Section* section) {
  const Fields capacity = doc.Object("capacity");
  std::vector<Stat> stats = {{"replicas at most", doc.Int("max_replicas")},
                             {"replicas on average", doc.Num("mean_replicas")},
                             {"utilisation", doc.Num("mean_utilisation")},
                             {"per replica", capacity.Num("per_replica")}};
  if (doc.Has("cost_per_million_tokens")) {  // with --price
    stats.push_back({"$ per 1M tokens", doc.Num("cost_per_million_tokens")});
    stats.push_back({"requests/s per $/h", doc.NumOr("qps_per_dollar_hour", kNaN)});
  }
  section->Stats(std::move(stats));
  section->Text(
      fmt::format("one replica serves {:.4g} requests/s at {} (titan load sweep's knee); "
                  "demand: {}",
                  capacity.Num("per_replica"), capacity.Str("slo"),
                  doc.Object("demand").StrOr("forecast", "")));
  const std::string unit = doc.StrOr("unit", "requests/s");
  Plot plot{"Replicas per step",
            fmt::format("each step needs the forecast's {} quantile of its peak over one "
                        "replica's goodput, plus spares for failures",
                        doc.Num("quantile")),
            {"time", "", false, true},
            {"demand", unit}};
  plot.y2 = Axis{"replicas", ""};
  plot.y2->min = 0;
  plot.series = {{fmt::format("peak q{}", doc.Num("quantile")), unit},
                 {"mean", unit, "line", "", true},
                 {"replicas", "", "step", "", false, true}};
  plot.ys.assign(3, {});
  for (const json& s : doc.Array("steps")) {
    const Fields f(s, doc.where() + ".steps[]");
    const double t = f.Num("time");
    if (!plot.xs.empty() && t <= plot.xs.back()) continue;
    plot.xs.push_back(t);
    plot.ys[0].push_back(f.Num("peak_demand"));
    plot.ys[1].push_back(f.Num("mean_demand"));
    plot.ys[2].push_back(static_cast<double>(f.Int("replicas")));
  }
  section->Add(std::move(plot));
}

void AddFailureProjection(const Fields& doc, Section* section) {
  const Fields fit = doc.Object("fit");
  section->Stats({{"failures per 1,000 component-days", 1000 * fit.Num("per_component_day")},
                  {"in service", fit.Num("in_service")},
                  {"dispersion k", fit.NumOr("dispersion_k", kNaN)},
                  {"repair median h", fit.NumOr("repair_median_hours", kNaN)}});
  Table projections{"Projected failures",
                    "negative binomial 90% interval (overdispersed: failure waves)",
                    {"days", "expected", "90% low", "90% high"},
                    {}};
  for (const json& p : doc.Array("projections")) {
    const Fields f(p, doc.where() + ".projections[]");
    projections.rows.push_back({f.Num("days"), f.Num("expected"), f.Int("low"), f.Int("high")});
  }
  section->Add(std::move(projections));
  for (const json& b : doc.ArrayOr("backtest")) {
    const Fields bt(b, doc.where() + ".backtest[]");
    Plot plot{fmt::format("Backtest of the {:.0f}-day projection", bt.Num("horizon_days")),
              fmt::format("actual count in the 90% interval at {:.0f}% of origins (a Poisson "
                          "interval: {:.0f}%)",
                          100 * bt.Num("coverage"), 100 * bt.Num("poisson_coverage")),
              {"origin", "", false, true},
              {"failures", ""}};
    plot.series = {{"actual", "", "points"},
                   {"expected", "", "line"},
                   {"90% high", "", "line", "", true},
                   {"90% low", "", "line", "", true},
                   {"Poisson high", "", "line", "#999999", true}};
    plot.ys.assign(plot.series.size(), {});
    for (const json& c : bt.Array("checks")) {
      const Fields f(c, bt.where() + ".checks[]");
      const double t = f.Num("origin");
      if (!plot.xs.empty() && t <= plot.xs.back()) continue;
      plot.xs.push_back(t);
      plot.ys[0].push_back(f.Num("actual"));
      plot.ys[1].push_back(f.Num("expected"));
      plot.ys[2].push_back(f.Num("high"));
      plot.ys[3].push_back(f.Num("low"));
      plot.ys[4].push_back(f.NumOr("poisson_high", kNaN));
    }
    plot.bands.emplace_back(2, 3);
    section->Add(std::move(plot));
  }
}

}  // namespace

void AddPlan(const Input& input, Report* report) {
  const Fields doc(input.doc, input.path);
  const std::string kind = doc.Str("kind");
  struct Builder {
    std::string_view kind, title;
    void (*add)(const Fields&, Section*);
  };
  static constexpr Builder kBuilders[] = {
      {"titan.plan.demand", "Demand forecast", AddDemandForecast},
      {"titan.plan.backtest", "Forecast backtest", AddForecastBacktest},
      {"titan.plan.training", "Training plan", AddTrainingPlan},
      {"titan.plan.serving", "Serving plan", AddServingPlan},
      {"titan.plan.failures", "Fleet failure projection", AddFailureProjection},
  };
  for (const Builder& b : kBuilders) {
    if (kind != b.kind) continue;
    Section section(std::string(b.title), input.path);
    b.add(doc, &section);
    report->sections.push_back(std::move(section));
    return;
  }
  throw InputError(fmt::format("{}.kind: \"{}\" is no titan plan result", input.path, kind));
}

}  // namespace titan::report
