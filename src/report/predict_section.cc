// Report sections for `titan predict ... --json` (docs/predict.md):
//  - survival: Kaplan-Meier curves by group on a common age grid, the Cox hazard ratios, the
//    fleet's MTBF per period (by group when the analysis split it);
//  - risk: the ranking of components and nodes with their reasons;
//  - backtest: every model's metrics per component and unit, and the calibration plot.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "src/report/fields.h"
#include "src/report/sections.h"

namespace titan::report {

namespace {

using nlohmann::json;

constexpr int kGridPoints = 240;
constexpr size_t kMaxCurves = 16;

void AddSurvival(const Fields& a, Section* section) {
  const json& curves = a.Array("kaplan_meier");
  double max_days = 0;
  for (const json& c : curves) {
    const json& t = Fields(c, a.where() + ".kaplan_meier[]").Array("time_days");
    if (!t.empty()) max_days = std::max(max_days, NumOrNaN(t.back()));
  }
  Plot km{"Kaplan-Meier survival by age",
          "each curve a group; 1 - the share failed by that age",
          {"age", "years"},
          {"surviving", "fraction"}};
  km.y.min = 0;
  km.y.max = 1;
  for (int g = 0; g <= kGridPoints; ++g) km.xs.push_back(max_days / 365.25 * g / kGridPoints);
  for (size_t i = 0; i < curves.size() && i < kMaxCurves; ++i) {
    const Fields c(curves[i], fmt::format("{}.kaplan_meier[{}]", a.where(), i));
    const json& t = c.Array("time_days");
    const json& s = c.Array("surv");
    km.series.push_back({c.Str("group"), "fraction", "step"});
    std::vector<double> ys;
    size_t k = 0;
    double last = 1;
    for (double x : km.xs) {
      while (k < t.size() && NumOrNaN(t[k]) / 365.25 <= x) last = NumOrNaN(s[k++]);
      ys.push_back(last);
    }
    km.ys.push_back(std::move(ys));
  }
  section->Add(std::move(km));
  if (a.json().contains("cox") && a.json()["cox"].is_object()) {
    const Fields cox = a.Object("cox");
    Table hr{"Cox proportional hazards",
             fmt::format("Efron ties, robust SE clustered by component; n {}, events {}",
                         cox.Int("n"), cox.Int("events")),
             {"term", "HR", "95% low", "95% high", "coef", "robust SE", "p"},
             {}};
    for (const json& t : cox.Array("terms")) {
      const Fields f(t, cox.where() + ".terms[]");
      hr.rows.push_back({f.Str("name"), f.Num("hr"), f.Num("lower"), f.Num("upper"), f.Num("coef"),
                         f.Num("robust_se"), f.Num("p")});
    }
    section->Add(std::move(hr));
  }
  const Fields mtbf = a.Object("mtbf");
  const json& rows = mtbf.Array("rows");
  std::vector<std::string> groups;
  for (const json& r : rows) {
    if (!r.contains("by_group") || !r["by_group"].is_object()) continue;
    for (const auto& [level, v] : r["by_group"].items()) {
      if (std::find(groups.begin(), groups.end(), level) == groups.end()) groups.push_back(level);
    }
  }
  std::sort(groups.begin(), groups.end());
  Plot plot{"Fleet MTBF per " + mtbf.Str("period"),
            "hours in the period / failures in it",
            {mtbf.Str("period"), ""},
            {"MTBF", "h", true}};
  Table table{
      "MTBF per " + mtbf.Str("period"), "", {"period", "failures", "MTBF h", "in service"}, {}};
  plot.series.push_back({"fleet", "h", "points"});
  for (const std::string& g : groups) {
    plot.series.push_back({mtbf.Str("group") + "=" + g, "h", "points"});
    table.columns.push_back("MTBF h " + g);
  }
  plot.ys.assign(plot.series.size(), {});
  for (size_t i = 0; i < rows.size(); ++i) {
    const Fields r(rows[i], fmt::format("{}.rows[{}]", mtbf.where(), i));
    plot.x.categories.push_back(r.Str("period"));
    plot.xs.push_back(static_cast<double>(i));
    plot.ys[0].push_back(r.Num("mtbf_hours"));
    std::vector<json> row = {r.Str("period"), r.Int("failures"), r.Num("mtbf_hours"),
                             r.Num("in_service")};
    for (size_t g = 0; g < groups.size(); ++g) {
      const json& by = r.json().contains("by_group") ? r.json()["by_group"] : json();
      const double v = by.is_object() && by.contains(groups[g])
                           ? NumOrNaN(by[groups[g]].value("mtbf_hours", json()))
                           : kNaN;
      plot.ys[g + 1].push_back(v);
      row.push_back(v);
    }
    table.rows.push_back(std::move(row));
  }
  section->Add(std::move(plot));
  section->Add(std::move(table));
}

void AddRisk(const Fields& r, Section* section) {
  section->Stats({{"at", r.Str("at")},
                  {"horizon days", r.Num("horizon_days")},
                  {"model", r.Str("model")},
                  {"in service", r.Int("components_in_service")},
                  {"expected failures", r.Num("expected_failures")}});
  Table comps{"Components most likely to fail within the horizon",
              "reasons: the features that raise the risk most; recent: failures and repairs",
              {"rank", "component", "P", "node", "reasons", "recent"},
              {}};
  for (const json& c : r.Array("components")) {
    const Fields f(c, r.where() + ".components[]");
    std::string reasons, recent;
    for (const json& x : f.ArrayOr("reasons")) {
      reasons += fmt::format("{}{}={:.3g}", reasons.empty() ? "" : ", ",
                             x.value("feature", std::string()), NumOrNaN(x.value("value", json())));
    }
    for (const json& x : f.ArrayOr("recent")) {
      if (x.is_string()) recent += (recent.empty() ? "" : "; ") + x.get<std::string>();
    }
    comps.rows.push_back(
        {f.Int("rank"), f.Str("component"), f.Num("p"), f.StrOr("node_name", ""), reasons, recent});
  }
  section->Add(std::move(comps));
  Table nodes{"Nodes most likely to have a failure", "", {"node", "P(any)", "components"}, {}};
  const json& ns = r.ArrayOr("nodes");
  for (size_t i = 0; i < ns.size() && i < 20; ++i) {
    const Fields f(ns[i], r.where() + ".nodes[]");
    nodes.rows.push_back({f.Str("node_name"), f.Num("p"), f.Int("components")});
  }
  section->Add(std::move(nodes));
}

Table MetricsTable(const std::string& title, const Fields& models, const std::string& best) {
  Table t{title,
          "concordance within origins; AUC and IPCW Brier at the horizon; precision and lift at "
          "the top fraction of each origin",
          {"model", "c_index", "c_index_uno", "auc", "brier", "calibration slope", "precision@10%",
           "recall@10%", "lift@1%", "lift@10%"},
          {}};
  for (const auto& [name, m] : models.json().items()) {
    const Fields f(m, models.where() + "." + name);
    t.rows.push_back({name == best ? name + " (default)" : name, f.Num("c_index"),
                      f.Num("c_index_uno"), f.Num("auc"), f.Num("brier"),
                      f.Num("calibration_slope"), f.Object("precision_at").Num("0.1"),
                      f.Object("recall_at").Num("0.1"), f.Object("lift_at").Num("0.01"),
                      f.Object("lift_at").Num("0.1")});
  }
  return t;
}

void AddBacktest(const Fields& b, Section* section) {
  const std::string best = b.Str("default_model");
  section->Stats({{"default model", best},
                  {"origins", b.Int("origins")},
                  {"from", b.Str("split")},
                  {"horizon days", b.Num("horizon_days")}});
  const Fields models = b.Object("models");
  section->Add(MetricsTable("Backtest per component", models, best));
  if (b.Has("units")) {
    for (const auto& [unit, u] : b.json()["units"].items()) {
      const Fields uf(u, b.where() + ".units." + unit);
      section->Add(MetricsTable("Backtest per " + unit, uf.Object("models"), best));
    }
  }
  // Calibration: observed vs predicted by decile, with the diagonal.
  Plot cal{"Calibration",
           "IPCW share failed by the horizon against the mean prediction, by decile",
           {"predicted", "probability", true},
           {"observed", "probability", true}};
  std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>> lines;
  std::vector<double> xs;
  for (const auto& [name, m] : models.json().items()) {
    if (!m.contains("calibration") || !m["calibration"].is_array()) continue;
    std::vector<std::pair<double, double>> pts;
    for (const json& bin : m["calibration"]) {
      const double p = NumOrNaN(bin.value("p_mean", json()));
      if (std::isfinite(p) && p > 0) {
        pts.emplace_back(p, NumOrNaN(bin.value("observed", json())));
        xs.push_back(p);
      }
    }
    if (!pts.empty()) lines.emplace_back(name, std::move(pts));
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (!xs.empty()) {
    cal.xs = xs;
    cal.series.push_back({"perfect", "probability", "line", "#999999", true});
    cal.ys.push_back(xs);
    for (const auto& [name, pts] : lines) {
      cal.series.push_back({name, "probability", "points"});
      std::vector<double> ys(xs.size(), kNaN);
      for (const auto& [p, o] : pts) {
        ys[std::lower_bound(xs.begin(), xs.end(), p) - xs.begin()] = o > 0 ? o : kNaN;
      }
      cal.ys.push_back(std::move(ys));
    }
    section->Add(std::move(cal));
  }
}

}  // namespace

void AddPredict(const Input& input, Report* report) {
  const Fields doc(input.doc, input.path);
  if (doc.Has("kaplan_meier")) {
    Section section("Fleet survival", input.path);
    AddSurvival(doc, &section);
    report->sections.push_back(std::move(section));
  } else if (doc.Has("default_model")) {
    Section section("Risk model backtest", input.path);
    AddBacktest(doc, &section);
    report->sections.push_back(std::move(section));
  } else {
    Section section("Failure risk", input.path);
    AddRisk(doc, &section);
    report->sections.push_back(std::move(section));
  }
}

}  // namespace titan::report
