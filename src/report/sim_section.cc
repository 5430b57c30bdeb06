// Report section for `titan sim --json`: ETTR with its 95% confidence band next to the analytic
// value, the checkpoint interval against Young's and Daly's, where the time goes, and what
// interrupts the job; over the swept values when the input is a sweep.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "src/base/text.h"
#include "src/report/fields.h"
#include "src/report/sections.h"

namespace titan::report {

namespace {

constexpr const char* kShares[] = {"productive", "checkpoint", "lost_work", "restart",
                                   "detection",  "waiting",    "degraded"};
constexpr const char* kShareColors[] = {"#2ca02c", "#17becf", "#d62728", "#9467bd",
                                        "#ff7f0e", "#bdbdbd", "#8c564b"};

struct Point {
  std::string value;  // the swept value as written
  double ettr, ettr_ci, analytic, interval, young, daly, mtbf;
  double shares[std::size(kShares)];
};

Point ReadRow(const Fields& row) {
  Point p;
  p.value = row.Has("value") ? row.StrOr("value", "") : "";
  const Fields ettr = row.Object("ettr");
  p.ettr = ettr.Num("mean");
  p.ettr_ci = ettr.NumOr("ci95", 0);
  p.analytic = row.NumOr("analytic_ettr", kNaN);
  p.interval = row.NumOr("interval_minutes", kNaN);
  p.young = row.NumOr("young_minutes", kNaN);
  p.daly = row.NumOr("daly_minutes", kNaN);
  p.mtbf = row.NumOr("job_mtbf_hours", kNaN);
  const bool has_shares = row.Has("time_share");
  for (size_t k = 0; k < std::size(kShares); ++k) {
    p.shares[k] = has_shares && row.Object("time_share").Has(kShares[k])
                      ? row.Object("time_share").Object(kShares[k]).Num("mean")
                      : kNaN;
  }
  return p;
}

// One bar per named category (a cause, a time share).
Plot CategoryBars(std::string title, std::string y_label, std::string y_unit, Series series,
                  const std::vector<std::pair<std::string, double>>& bars) {
  Plot plot;
  plot.title = std::move(title);
  plot.y = {std::move(y_label), std::move(y_unit)};
  plot.series = {std::move(series)};
  plot.ys.assign(1, {});
  for (const auto& [name, value] : bars) {
    plot.x.categories.push_back(name);
    plot.xs.push_back(static_cast<double>(plot.xs.size()));
    plot.ys[0].push_back(value);
  }
  return plot;
}

void AddCauses(const Fields& row, Section* section) {
  const nlohmann::json& causes = row.ArrayOr("interruptions_by_cause");
  if (causes.empty()) return;
  std::vector<std::pair<std::string, double>> bars;
  for (size_t i = 0; i < causes.size(); ++i) {
    const Fields c = row.Element("interruptions_by_cause", i);
    bars.emplace_back(c.Str("cause"), c.Object("count").Num("mean"));
  }
  Plot plot = CategoryBars("Interruptions by cause (mean per run)", "interruptions", "per run",
                           {"interruptions", "", "bars", "#d62728"}, bars);
  plot.x.label = "cause";
  section->Add(std::move(plot));
}

}  // namespace

void AddSim(const Input& input, Report* report) {
  const Fields doc(input.doc, input.path);
  std::vector<Point> points;
  std::string swept;
  const nlohmann::json* first_row = &input.doc;
  if (doc.Has("rows")) {
    const nlohmann::json& rows = doc.Array("rows");
    for (size_t i = 0; i < rows.size(); ++i) points.push_back(ReadRow(doc.Element("rows", i)));
    swept = doc.StrOr("sweep", "");
    if (!rows.empty()) first_row = &rows[0];
  } else {
    points.push_back(ReadRow(doc));
  }
  const Fields first(*first_row, input.path);
  Section section(
      fmt::format("Simulation: {} ({} GPUs{})", first.StrOr("name", "?"), first.NumOr("gpus", kNaN),
                  swept.empty() ? "" : ", sweep of " + swept),
      input.path);
  const Point& p0 = points.front();
  section.Stats({{"ETTR", fmt::format("{:.2f} % ± {:.2f}", 100 * p0.ettr, 100 * p0.ettr_ci),
                  p0.ettr >= 0.9 ? "ok" : "warn"},
                 {"analytic ETTR", fmt::format("{:.2f} %", 100 * p0.analytic)},
                 {"checkpoint interval (min)", p0.interval},
                 {"Young (min)", p0.young},
                 {"Daly (min)", p0.daly},
                 {"job MTBF (h)", p0.mtbf},
                 {"replicas", first.NumOr("replicas", kNaN)}});
  if (points.size() > 1) {
    // x: the swept values when they are numbers, else their positions.
    std::vector<double> xs;
    bool numeric = true;
    for (const Point& p : points) {
      double v = 0;
      numeric = numeric && ParseDouble(p.value, &v);
      xs.push_back(v);
    }
    Axis x{swept, ""};
    if (!numeric) {
      for (size_t i = 0; i < points.size(); ++i) {
        xs[i] = static_cast<double>(i);
        x.categories.push_back(points[i].value);
      }
    } else {
      x.log = xs.front() > 0 && xs.back() / xs.front() >= 16;
    }
    Plot ettr;
    ettr.title = "ETTR against " + swept;
    ettr.note = "Monte Carlo mean with its 95% confidence band, next to the analytic value.";
    ettr.x = x;
    ettr.y = {"ETTR", "fraction"};
    ettr.series = {{"ETTR (simulated)", ""},
                   {"upper 95%", "", "line", "#1f77b4", true},
                   {"lower 95%", "", "line", "#1f77b4", true},
                   {"analytic", "", "line", "#7f7f7f", true}};
    ettr.bands = {{1, 2}};
    ettr.ys.assign(4, {});
    Plot interval;
    interval.title = "Checkpoint interval against " + swept;
    interval.x = x;
    interval.y = {"interval", "min"};
    interval.series = {
        {"used", "min"}, {"Young", "min", "line", "", true}, {"Daly", "min", "line", "", true}};
    interval.ys.assign(3, {});
    Plot shares;
    shares.title = "Where the time goes, against " + swept;
    shares.x = x;
    shares.y = {"share of wall time", "fraction"};
    shares.stacked = true;
    for (size_t k = 0; k < std::size(kShares); ++k)
      shares.series.push_back({kShares[k], "", "bars", kShareColors[k]});
    shares.ys.assign(std::size(kShares), {});
    Table table{
        "Sweep",
        "",
        {swept, "ETTR", "± 95%", "analytic", "interval min", "Young min", "Daly min", "job MTBF h"},
        {}};
    for (size_t i = 0; i < points.size(); ++i) {
      const Point& p = points[i];
      ettr.xs.push_back(xs[i]);
      ettr.ys[0].push_back(p.ettr);
      ettr.ys[1].push_back(p.ettr + p.ettr_ci);
      ettr.ys[2].push_back(p.ettr - p.ettr_ci);
      ettr.ys[3].push_back(p.analytic);
      interval.xs.push_back(xs[i]);
      interval.ys[0].push_back(p.interval);
      interval.ys[1].push_back(p.young);
      interval.ys[2].push_back(p.daly);
      shares.xs.push_back(xs[i]);
      for (size_t k = 0; k < std::size(kShares); ++k) shares.ys[k].push_back(p.shares[k]);
      table.rows.push_back(
          {p.value, p.ettr, p.ettr_ci, p.analytic, p.interval, p.young, p.daly, p.mtbf});
    }
    if (numeric) {
      // Keep the sweep's order on the x axis: sort the points by x.
      std::vector<size_t> order(xs.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return xs[a] < xs[b]; });
      for (Plot* plot : {&ettr, &interval, &shares}) {
        std::vector<double> sx;
        for (size_t i : order) sx.push_back(plot->xs[i]);
        plot->xs = sx;
        for (auto& column : plot->ys) {
          std::vector<double> sorted;
          for (size_t i : order) sorted.push_back(column[i]);
          column = sorted;
        }
      }
    }
    section.Add(std::move(ettr));
    section.Add(std::move(interval));
    section.Add(std::move(shares));
    section.Add(std::move(table));
  } else {
    std::vector<std::pair<std::string, double>> bars;
    for (size_t k = 0; k < std::size(kShares); ++k) bars.emplace_back(kShares[k], p0.shares[k]);
    Plot shares = CategoryBars("Where the time goes", "share of wall time", "fraction",
                               {"share", "", "bars", "#2ca02c"}, bars);
    section.Add(std::move(shares));
  }
  AddCauses(first, &section);
  report->sections.push_back(std::move(section));
}

}  // namespace titan::report
