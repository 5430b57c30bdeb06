#include "src/predict/survival_analysis.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "src/base/csv.h"
#include "src/fleet/time_text.h"
#include "src/predict/cox.h"
#include "src/predict/design.h"
#include "src/predict/stays.h"
#include "src/predict/survfit.h"

namespace titan::predict {

namespace {

using nlohmann::json;
constexpr double kSecondsPerDay = 86400;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json Nums(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(Num(x));
  return a;
}

// The records of the analysis: stays, their intervals in days, the classes counted.
struct Records {
  StayTable table;
  std::vector<Stay> stays;
  std::vector<Interval> intervals;
  std::vector<int32_t> cause_of_class;  // history class -> cause index, -1 not counted
  std::vector<std::string> causes;      // names
};

Records MakeRecords(const fleet::FleetHistory& history, const SurvivalOptions& o) {
  Records r;
  r.table = BuildStays(history);
  r.stays = o.all_failures ? r.table.stays : FirstFailureStays(r.table.stays);
  const auto& names = history.failure_classes();
  r.cause_of_class.assign(names.size(), -1);
  for (size_t c = 0; c < names.size(); ++c) {
    if (o.classes.empty() ||
        std::find(o.classes.begin(), o.classes.end(), names[c]) != o.classes.end()) {
      r.cause_of_class[c] = static_cast<int32_t>(r.causes.size());
      r.causes.push_back(names[c]);
    }
  }
  r.intervals.reserve(r.stays.size());
  for (const Stay& s : r.stays) {
    Interval i;
    i.start = s.start_age_seconds / kSecondsPerDay;
    i.stop = s.stop_age_seconds / kSecondsPerDay;
    i.event = s.event_class >= 0 ? r.cause_of_class[s.event_class] : -1;
    i.cluster = s.component;
    r.intervals.push_back(i);
  }
  return r;
}

json CurveJson(const std::string& group, const std::vector<Interval>& data, double level) {
  SurvivalCurve c = KaplanMeier(data, level);
  int64_t events = 0;
  for (const Interval& i : data) events += i.event >= 0;
  std::vector<uint32_t> ids;
  for (const Interval& i : data) ids.push_back(i.cluster);
  std::sort(ids.begin(), ids.end());
  const int64_t n = std::unique(ids.begin(), ids.end()) - ids.begin();
  return {{"group", group},
          {"n", n},
          {"events", events},
          {"median_days", Num(c.Median())},
          {"time_days", c.time},
          {"n_risk", c.n_risk},
          {"n_event", c.n_event},
          {"surv", Nums(c.surv)},
          {"std_err", Nums(c.std_err)},
          {"lower", Nums(c.lower)},
          {"upper", Nums(c.upper)}};
}

std::string PeriodName(Period p) {
  return p == Period::kMonth ? "month" : p == Period::kQuarter ? "quarter" : "year";
}

}  // namespace

Result<json> AnalyseSurvival(const fleet::FleetHistory& history, const SurvivalOptions& o) {
  Records r = MakeRecords(history, o);
  if (r.intervals.empty()) {
    return InvalidArgumentError("the history has no stay in service (no enter record) to analyse");
  }
  json out;
  // The history.
  json classes = json::object(), skipped = json::object();
  int64_t failures = 0;
  for (const fleet::Event& e : history.events()) {
    if (e.kind != fleet::EventKind::kFail) continue;
    ++failures;
    const std::string& name = history.failure_classes()[e.failure_class];
    classes[name] = classes.value(name, 0) + 1;
  }
  for (const auto& [why, n] : history.stats().skipped) skipped[why] = n;
  out["history"] = {{"components", history.components().size()},
                    {"records", history.events().size()},
                    {"stays", r.table.stays.size()},
                    {"failures", failures},
                    {"failures_out_of_service", r.table.failures_out_of_service},
                    {"classes", classes},
                    {"begin", fleet::FormatTime(history.begin_seconds())},
                    {"end", fleet::FormatTime(history.end_seconds())},
                    {"skipped", skipped}};
  int64_t events = 0;
  for (const Interval& i : r.intervals) events += i.event >= 0;
  out["event"] = {
      {"definition",
       std::string(o.all_failures ? "every failure" : "first failure of each component") +
           (o.classes.empty() ? " (any class)"
                              : " (classes: " + fmt::format("{}", fmt::join(o.classes, ", ")) +
                                    "; others censor)") +
           ", on the component's age; each stay a (start, stop] record with delayed entry"},
      {"classes", r.causes},
      {"records", r.intervals.size()},
      {"events", events}};

  // Kaplan-Meier: all, then per group.
  std::vector<const fleet::Attributes*> rows;
  for (const Stay& s : r.stays) rows.push_back(s.attributes);
  Design design = MakeDesign(o.by, rows);
  json seconds = json::object();
  json km = json::array();
  double t0 = Now();
  km.push_back(CurveJson("all", r.intervals, o.conf_level));
  seconds["kaplan_meier_all"] = Now() - t0;
  if (!o.by.empty()) {
    std::map<std::string, std::vector<Interval>> groups;
    for (size_t i = 0; i < r.stays.size(); ++i) {
      groups[design.GroupName(*r.stays[i].attributes)].push_back(r.intervals[i]);
    }
    for (const auto& [name, data] : groups) km.push_back(CurveJson(name, data, o.conf_level));
  }
  out["kaplan_meier"] = km;

  // Cox on the grouping keys.
  out["cox"] = nullptr;
  if (design.p() > 0) {
    std::vector<double> x;
    x.reserve(r.intervals.size() * design.p());
    for (const Stay& s : r.stays) design.AppendRow(*s.attributes, &x);
    t0 = Now();
    auto fit = FitCox(r.intervals, x, design.p());
    seconds["cox"] = Now() - t0;
    if (!fit.ok()) {
      std::string msg(fit.status().message());
      for (int j = 0; j < design.p(); ++j) {
        std::string needle = fmt::format("covariate {} ", j);
        if (size_t at = msg.find(needle); at != std::string::npos) {
          msg.replace(at, needle.size(), "'" + design.columns[j] + "' ");
        }
      }
      return InvalidArgumentError("Cox model on --by " + fmt::format("{}", fmt::join(o.by, ",")) +
                                  ": " + msg);
    }
    const double z = NormalQuantile(o.conf_level);
    json terms = json::array();
    for (int j = 0; j < design.p(); ++j) {
      const double se = fit->robust_se[j];
      const double zz = fit->coef[j] / se;
      terms.push_back({{"name", design.columns[j]},
                       {"coef", fit->coef[j]},
                       {"hr", std::exp(fit->coef[j])},
                       {"se", fit->se[j]},
                       {"robust_se", se},
                       {"z", zz},
                       {"p", std::erfc(std::fabs(zz) / std::sqrt(2.0))},
                       {"lower", std::exp(fit->coef[j] - z * se)},
                       {"upper", std::exp(fit->coef[j] + z * se)}});
    }
    out["cox"] = {{"terms", terms},
                  {"loglik", fit->loglik},
                  {"loglik_null", fit->loglik_null},
                  {"n", fit->n},
                  {"events", fit->events},
                  {"clusters", fit->clusters},
                  {"iterations", fit->iterations},
                  {"ties", "efron"},
                  {"variance", "robust, clustered by component"}};
  }

  // Competing risks.
  t0 = Now();
  CumulativeIncidence ci = AalenJohansen(r.intervals, static_cast<int>(r.causes.size()));
  seconds["aalen_johansen"] = Now() - t0;
  json inc = json::array();
  for (const auto& v : ci.incidence) inc.push_back(v);
  out["cumulative_incidence"] = {
      {"classes", r.causes}, {"time_days", ci.time}, {"n_risk", ci.n_risk}, {"incidence", inc}};

  // MTBF.
  json mt = json::array();
  for (const MtbfRow& m : MtbfPerPeriod(history, o.period, o.classes, o.mtbf_group)) {
    json by = json::object();
    for (const auto& [level, n] : m.failures_by_group) {
      by[level] = {{"failures", n}, {"mtbf_hours", Num(m.hours / static_cast<double>(n))}};
    }
    mt.push_back({{"period", m.period},
                  {"hours", m.hours},
                  {"failures", m.failures},
                  {"mtbf_hours", Num(m.mtbf_hours)},
                  {"in_service", m.in_service},
                  {"by_group", by}});
  }
  out["mtbf"] = {{"period", PeriodName(o.period)}, {"group", o.mtbf_group}, {"rows", mt}};
  out["seconds"] = seconds;  // inside the process, as bench/predict_bench.sh compares with R
  return out;
}

Result<std::string> SurvivalRecordsCsv(const fleet::FleetHistory& history,
                                       const SurvivalOptions& o) {
  Records r = MakeRecords(history, o);
  std::string out = "start_days,stop_days,event,cause,cluster";
  for (const std::string& k : o.by) out += "," + CsvField(k);
  out += '\n';
  for (size_t i = 0; i < r.stays.size(); ++i) {
    const Interval& v = r.intervals[i];
    out += fmt::format("{:.17g},{:.17g},{},{},{}", v.start, v.stop, v.event >= 0 ? 1 : 0,
                       v.event >= 0 ? CsvField(r.causes[v.event]) : "censored",
                       CsvField(history.components()[v.cluster].id));
    for (const std::string& k : o.by) {
      const std::string* a = fleet::FindAttribute(*r.stays[i].attributes, k);
      out += "," + CsvField(a ? *a : "NA");
    }
    out += '\n';
  }
  return out;
}

std::string FormatSurvival(const json& a) {
  std::string out;
  const json& h = a["history"];
  std::string classes;
  for (const auto& [name, n] : h["classes"].items()) {
    classes += fmt::format("{}{} {}", classes.empty() ? "" : ", ", name, n.get<int64_t>());
  }
  out += fmt::format("history   {} components, {} stays, {} failures ({}), {} .. {}\n",
                     h["components"].get<int64_t>(), h["stays"].get<int64_t>(),
                     h["failures"].get<int64_t>(), classes, h["begin"].get<std::string>(),
                     h["end"].get<std::string>());
  for (const auto& [why, n] : h["skipped"].items()) {
    out += fmt::format("skipped   {} records: {}\n", n.get<int64_t>(), why);
  }
  out += fmt::format("event     {}: {} records, {} events\n",
                     a["event"]["definition"].get<std::string>(),
                     a["event"]["records"].get<int64_t>(), a["event"]["events"].get<int64_t>());
  out += "\nKaplan-Meier survival by age (95% pointwise CI, Greenwood, log transform)\n";
  out += fmt::format("  {:<24} {:>7} {:>7} {:>9}", "group", "n", "events", "median_y");
  for (int y = 1; y <= 5; ++y) out += fmt::format("  {:>20}", fmt::format("S({}y) [CI]", y));
  out += '\n';
  for (const json& c : a["kaplan_meier"]) {
    SurvivalCurve curve;
    curve.time = c["time_days"].get<std::vector<double>>();
    auto vec = [&](const char* k) {
      std::vector<double> v;
      for (const json& x : c[k]) v.push_back(x.is_null() ? NAN : x.get<double>());
      return v;
    };
    std::vector<double> surv = vec("surv"), lo = vec("lower"), hi = vec("upper");
    const double median =
        c["median_days"].is_null() ? NAN : c["median_days"].get<double>() / 365.25;
    out += fmt::format("  {:<24} {:>7} {:>7} {:>9}", c["group"].get<std::string>(),
                       c["n"].get<int64_t>(), c["events"].get<int64_t>(),
                       std::isfinite(median) ? fmt::format("{:.2f}", median) : ">last");
    const double last = curve.time.empty() ? 0 : curve.time.back();
    for (int y = 1; y <= 5; ++y) {
      const double t = y * 365.25;
      auto it = std::upper_bound(curve.time.begin(), curve.time.end(), t);
      size_t k = it - curve.time.begin();
      if (t > last * 1.0001 && k == curve.time.size()) {
        out += fmt::format("  {:>20}", "-");
      } else if (k == 0) {
        out += fmt::format("  {:>20}", "1.000");
      } else {
        out += fmt::format(
            "  {:>20}", fmt::format("{:.3f} [{:.3f},{:.3f}]", surv[k - 1], lo[k - 1], hi[k - 1]));
      }
    }
    out += '\n';
  }
  if (!a["cox"].is_null()) {
    const json& cox = a["cox"];
    out += fmt::format(
        "\nCox proportional hazards (Efron ties; robust SE clustered by component): n {}, events "
        "{}, components {}, loglik {:.2f} (null {:.2f})\n",
        cox["n"].get<int64_t>(), cox["events"].get<int64_t>(), cox["clusters"].get<int64_t>(),
        cox["loglik"].get<double>(), cox["loglik_null"].get<double>());
    out += fmt::format("  {:<20} {:>9} {:>8} {:>19} {:>9} {:>9} {:>8} {:>10}\n", "term", "coef",
                       "HR", "95% CI", "se", "robust_se", "z", "p");
    for (const json& t : cox["terms"]) {
      out += fmt::format(
          "  {:<20} {:>9.4f} {:>8.3f} {:>19} {:>9.4f} {:>9.4f} {:>8.2f} {:>10.2g}\n",
          t["name"].get<std::string>(), t["coef"].get<double>(), t["hr"].get<double>(),
          fmt::format("[{:.3f}, {:.3f}]", t["lower"].get<double>(), t["upper"].get<double>()),
          t["se"].get<double>(), t["robust_se"].get<double>(), t["z"].get<double>(),
          t["p"].get<double>());
    }
  }
  const json& ci = a["cumulative_incidence"];
  if (ci["classes"].size() > 1) {
    out += "\nCumulative incidence by class (Aalen-Johansen, the other classes competing)\n";
    out += fmt::format("  {:<10}", "class");
    for (int y = 1; y <= 5; ++y) out += fmt::format(" {:>8}", fmt::format("{}y", y));
    out += '\n';
    std::vector<double> t = ci["time_days"].get<std::vector<double>>();
    for (size_t c = 0; c < ci["classes"].size(); ++c) {
      std::vector<double> v = ci["incidence"][c].get<std::vector<double>>();
      out += fmt::format("  {:<10}", ci["classes"][c].get<std::string>());
      for (int y = 1; y <= 5; ++y) {
        size_t k = std::upper_bound(t.begin(), t.end(), y * 365.25) - t.begin();
        out += fmt::format(" {:>8.4f}", k == 0 ? 0.0 : v[k - 1]);
      }
      out += '\n';
    }
  }
  const json& m = a["mtbf"];
  out += fmt::format(
      "\nFleet MTBF per {} (hours / failures{})\n", m["period"].get<std::string>(),
      m["group"].get<std::string>().empty() ? "" : "; by " + m["group"].get<std::string>());
  out += fmt::format("  {:<8} {:>9} {:>10} {:>11}", "period", "failures", "mtbf_h", "in_service");
  std::vector<std::string> levels;
  for (const json& row : m["rows"]) {
    for (const auto& [level, v] : row["by_group"].items()) {
      if (std::find(levels.begin(), levels.end(), level) == levels.end()) levels.push_back(level);
    }
  }
  std::sort(levels.begin(), levels.end());
  for (const std::string& l : levels) out += fmt::format(" {:>14}", "mtbf_h " + l);
  out += '\n';
  for (const json& row : m["rows"]) {
    out += fmt::format("  {:<8} {:>9} {:>10} {:>11.0f}", row["period"].get<std::string>(),
                       row["failures"].get<int64_t>(),
                       row["mtbf_hours"].is_null()
                           ? std::string("-")
                           : fmt::format("{:.1f}", row["mtbf_hours"].get<double>()),
                       row["in_service"].get<double>());
    for (const std::string& l : levels) {
      const json& g = row["by_group"];
      out += fmt::format(
          " {:>14}", g.contains(l) ? fmt::format("{:.1f}", g[l]["mtbf_hours"].get<double>()) : "-");
    }
    out += '\n';
  }
  return out;
}

}  // namespace titan::predict
