#include "src/predict/risk.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "src/fleet/time_text.h"
#include "src/predict/backtest.h"
#include "src/predict/models.h"

namespace titan::predict {

using fleet::Event;
using fleet::EventKind;
using nlohmann::json;

namespace {

constexpr size_t kReasons = 3;
constexpr size_t kRecent = 3;
constexpr double kRecentWindow = 365 * kDaySeconds;

// The latest failures and repairs of each component and node before `at`, newest first.
std::map<std::string, std::vector<std::string>> RecentEvents(const fleet::FleetHistory& h,
                                                             double at) {
  std::map<std::string, std::vector<std::string>> recent;
  std::vector<const fleet::Attributes*> where(h.components().size(), nullptr);
  for (const Event& e : h.events()) {
    if (e.time_seconds > at) break;
    if (e.kind == EventKind::kEnter) where[e.component] = &e.attributes;
    if (e.time_seconds < at - kRecentWindow) continue;
    if (e.kind != EventKind::kFail && e.kind != EventKind::kRepair) continue;
    const std::string& id = h.components()[e.component].id;
    std::string what = e.kind == EventKind::kFail ? h.failure_classes()[e.failure_class] : "repair";
    std::string line = fmt::format("{} {} of {}{}", fleet::FormatDate(e.time_seconds), what, id,
                                   e.text.empty() ? "" : " (" + e.text + ")");
    recent["c:" + id].push_back(line);
    if (where[e.component]) {
      if (const std::string* n = fleet::FindAttribute(*where[e.component], "node_name")) {
        recent["n:" + *n].push_back(line);
      }
    }
  }
  for (auto& [k, v] : recent) {
    std::reverse(v.begin(), v.end());
    if (v.size() > kRecent) v.resize(kRecent);
  }
  return recent;
}

}  // namespace

Result<json> PredictRisk(const fleet::FleetHistory& history, const RiskOptions& o) {
  const std::string name = o.model.empty() ? kDefaultModel : o.model;
  auto model = MakeModel(name);
  if (!model) {
    return InvalidArgumentError(
        fmt::format("unknown model '{}' (models: {})", name, fmt::join(ModelNames(), ", ")));
  }
  const double h = o.horizon_seconds;
  if (o.at_seconds < history.begin_seconds() + 2 * h) {
    return InvalidArgumentError(
        fmt::format("--at {} leaves less than two horizons of history to learn from (it starts {})",
                    fleet::FormatTime(o.at_seconds), fleet::FormatTime(history.begin_seconds())));
  }
  FeatureOptions fo;
  fo.horizon_seconds = h;
  const FeatureSpace space = FeatureSpace::Make(history, fo);
  LandmarkOptions train_opts;
  train_opts.origins_seconds = TrainingOrigins(history, o.at_seconds, h, o.at_seconds);
  train_opts.non_event_fraction = o.train_fraction;
  const Landmarks train = BuildLandmarks(history, space, train_opts);
  if (train.rows.empty()) return InvalidArgumentError("no component in service to learn from");
  TITAN_RETURN_IF_ERROR(model->Fit(train, space));
  LandmarkOptions now_opts;
  now_opts.origins_seconds = {o.at_seconds};
  const Landmarks now = BuildLandmarks(history, space, now_opts);
  std::vector<double> p = model->Predict(now);
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  const auto recent = RecentEvents(history, o.at_seconds);
  auto unit_name = [&](const LandmarkRow& r, int k) -> std::string {
    return k < static_cast<int>(now.unit_values.size()) && r.units[k] >= 0
               ? now.unit_values[k][r.units[k]]
               : "";
  };
  json comps = json::array();
  for (size_t rank = 0; rank < order.size() && rank < o.top; ++rank) {
    const size_t i = order[rank];
    const LandmarkRow& r = now.rows[i];
    const std::string& id = history.components()[r.component].id;
    json reasons = json::array();
    std::vector<double> c = model->Contributions(now, i);
    std::vector<size_t> by(c.size());
    std::iota(by.begin(), by.end(), 0);
    std::sort(by.begin(), by.end(), [&](size_t a, size_t b) { return c[a] > c[b]; });
    for (size_t k = 0; k < by.size() && reasons.size() < kReasons && c[by[k]] > 0; ++k) {
      const double v = now.x[i * space.p() + by[k]];
      const std::string& f = space.names[by[k]];
      // A level the component is not at is no reason; counts and days are stored as
      // log(1 + n): show n.
      const bool level = f.find('=') != std::string::npos;
      if (level && v == 0) continue;
      const bool logged = !level && f.rfind("cov_", 0) != 0;
      reasons.push_back(
          {{"feature", f}, {"value", logged ? std::expm1(v) : v}, {"contribution", c[by[k]]}});
    }
    json rec = json::array();
    if (auto it = recent.find("c:" + id); it != recent.end()) {
      for (const std::string& s : it->second) rec.push_back(s);
    }
    const std::string node = unit_name(r, 0);
    if (auto it = recent.find("n:" + node); it != recent.end() && !node.empty()) {
      for (const std::string& s : it->second) {
        if (std::find(rec.begin(), rec.end(), s) == rec.end()) rec.push_back(s);
      }
    }
    comps.push_back({{"rank", rank + 1},
                     {"component", id},
                     {"p", p[i]},
                     {"node_name", node},
                     {"slot_name", unit_name(r, 1)},
                     {"reasons", reasons},
                     {"recent", rec}});
  }
  // Units (the first unit key: nodes).
  std::map<std::string, std::pair<double, int>> units;  // log(1-p) sum, count
  for (size_t i = 0; i < now.rows.size(); ++i) {
    const std::string u = unit_name(now.rows[i], 0);
    if (u.empty()) continue;
    auto& [lq, n] = units[u];
    lq += std::log1p(-std::min(p[i], 1 - 1e-15));
    ++n;
  }
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [u, v] : units) ranked.emplace_back(-std::expm1(v.first), u);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  json nodes = json::array();
  for (size_t k = 0; k < ranked.size(); ++k) {
    nodes.push_back({{"node_name", ranked[k].second},
                     {"p", ranked[k].first},
                     {"components", units[ranked[k].second].second}});
  }
  const double expected = std::accumulate(p.begin(), p.end(), 0.0);
  return json{{"at", fleet::FormatTime(o.at_seconds)},
              {"top", o.top},
              {"horizon_days", h / kDaySeconds},
              {"model", name},
              {"components_in_service", now.rows.size()},
              {"expected_failures", expected},
              {"fleet_mtbf_hours", expected > 0 ? json(h / 3600 / expected) : json()},
              {"components", comps},
              {"nodes", nodes}};
}

std::string FormatRisk(const json& r) {
  std::string out = fmt::format(
      "risk at {} over {:.0f} d ({}): {} components in service, {:.1f} failures expected "
      "(fleet MTBF {} h)\n\n",
      r["at"].get<std::string>(), r["horizon_days"].get<double>(), r["model"].get<std::string>(),
      r["components_in_service"].get<int64_t>(), r["expected_failures"].get<double>(),
      r["fleet_mtbf_hours"].is_null() ? std::string("-")
                                      : fmt::format("{:.1f}", r["fleet_mtbf_hours"].get<double>()));
  out += fmt::format("  {:>4} {:<16} {:>7} {:<14} {}\n", "rank", "component", "P", "node",
                     "reasons / recent");
  for (const json& c : r["components"]) {
    std::string reasons;
    for (const json& x : c["reasons"]) {
      reasons += fmt::format("{}{}={:.3g}", reasons.empty() ? "" : ", ",
                             x["feature"].get<std::string>(), x["value"].get<double>());
    }
    out += fmt::format("  {:>4} {:<16} {:>7.4f} {:<14} {}\n", c["rank"].get<int64_t>(),
                       c["component"].get<std::string>(), c["p"].get<double>(),
                       c["node_name"].get<std::string>(), reasons);
    for (const json& s : c["recent"]) {
      out +=
          fmt::format("  {:>4} {:<16} {:>7} {:<14}   {}\n", "", "", "", "", s.get<std::string>());
    }
  }
  const json& nodes = r["nodes"];
  if (!nodes.empty()) {
    out += fmt::format("\n  {:>4} {:<16} {:>7} {}\n", "rank", "node", "P(any)", "components");
    const size_t top = r["top"].get<size_t>();
    for (size_t k = 0; k < nodes.size() && k < top; ++k) {
      out += fmt::format("  {:>4} {:<16} {:>7.4f} {}\n", k + 1,
                         nodes[k]["node_name"].get<std::string>(), nodes[k]["p"].get<double>(),
                         nodes[k]["components"].get<int64_t>());
    }
  }
  return out;
}

}  // namespace titan::predict
