#include "src/predict/backtest.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "src/fleet/time_text.h"
#include "src/predict/metrics.h"
#include "src/predict/models.h"

namespace titan::predict {

using nlohmann::json;

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Unit-level rows: per origin and unit value, P = 1 - prod(1 - p), failed if any failed. Rows
// of one origin are contiguous, so a dense slot per unit value, reset per origin, suffices.
std::vector<ScoredRow> ByUnit(const Landmarks& test, const std::vector<int32_t>& origin_of,
                              const std::vector<double>& p, int k) {
  std::vector<ScoredRow> out;
  std::vector<int64_t> slot(test.unit_values[k].size(), -1);
  std::vector<int32_t> touched;
  for (size_t i = 0; i < test.rows.size(); ++i) {
    if (i > 0 && origin_of[i] != origin_of[i - 1]) {
      for (int32_t u : touched) slot[u] = -1;
      touched.clear();
    }
    const LandmarkRow& r = test.rows[i];
    const int32_t unit = r.units[k];
    if (unit < 0) continue;
    if (slot[unit] < 0) {
      slot[unit] = static_cast<int64_t>(out.size());
      touched.push_back(unit);
      ScoredRow u;
      u.origin = origin_of[i];
      u.p = 0;  // accumulates log(1 - p) until the end
      u.order = static_cast<uint32_t>(unit);
      out.push_back(u);
    }
    ScoredRow& u = out[slot[unit]];
    u.p += std::log1p(-std::min(p[i], 1 - 1e-15));
    if (r.event) {
      u.follow = u.event ? std::min(u.follow, r.follow_seconds) : r.follow_seconds;
      u.event = true;
    } else if (!u.event) {
      u.follow = std::max(u.follow, r.follow_seconds);
    }
  }
  for (ScoredRow& u : out) u.p = -std::expm1(u.p);
  return out;
}

}  // namespace

std::vector<double> TrainingOrigins(const fleet::FleetHistory& history, double anchor,
                                    double horizon, double cutoff) {
  std::vector<double> v;
  const double first = history.begin_seconds() + horizon;  // a month of history first
  double t = anchor - std::floor((anchor - first) / horizon) * horizon;
  for (; t + horizon <= std::min(cutoff, history.end_seconds()); t += horizon) v.push_back(t);
  return v;
}

Landmarks SliceLandmarks(const Landmarks& all, int p, size_t begin, size_t end) {
  Landmarks s;
  s.rows.assign(all.rows.begin() + begin, all.rows.begin() + end);
  s.x.assign(all.x.begin() + begin * p, all.x.begin() + end * p);
  s.unit_values = all.unit_values;
  return s;
}

Result<json> RunBacktest(const fleet::FleetHistory& history, const BacktestOptions& o) {
  const double t0 = Now();
  const double h = o.horizon_seconds;
  std::vector<std::string> names = o.models.empty() ? ModelNames() : o.models;
  for (const std::string& n : names) {
    if (!MakeModel(n)) {
      return InvalidArgumentError(
          fmt::format("unknown model '{}' (models: {})", n, fmt::join(ModelNames(), ", ")));
    }
  }
  std::vector<double> origins;
  for (double t = o.split_seconds; t + h <= history.end_seconds(); t += o.every_seconds) {
    origins.push_back(t);
  }
  if (origins.empty()) {
    return InvalidArgumentError(
        fmt::format("no backtest origin: --split {} plus the horizon is past the history's end {}",
                    fleet::FormatTime(o.split_seconds), fleet::FormatTime(history.end_seconds())));
  }
  if (o.split_seconds < history.begin_seconds() + 2 * h) {
    return InvalidArgumentError(fmt::format(
        "--split {} leaves less than two horizons of history to learn from (it starts {})",
        fleet::FormatTime(o.split_seconds), fleet::FormatTime(history.begin_seconds())));
  }
  FeatureOptions fo;
  fo.horizon_seconds = h;
  const FeatureSpace space = FeatureSpace::Make(history, fo);
  const int p = space.p();
  LandmarkOptions train_opts;
  train_opts.origins_seconds = TrainingOrigins(history, o.split_seconds, h, origins.back());
  train_opts.non_event_fraction = o.train_fraction;
  const Landmarks train = BuildLandmarks(history, space, train_opts);
  LandmarkOptions test_opts;
  test_opts.origins_seconds = origins;
  const Landmarks test = BuildLandmarks(history, space, test_opts);
  const double t_features = Now();

  std::vector<int32_t> origin_of(test.rows.size());
  for (size_t i = 0, k = 0; i < test.rows.size(); ++i) {
    while (origins[k] < test.rows[i].origin_seconds) ++k;
    origin_of[i] = static_cast<int32_t>(k);
  }
  // Refit points: indices into origins.
  std::vector<size_t> fit_at;
  for (size_t k = 0; k < origins.size(); ++k) {
    if (fit_at.empty() || origins[k] - origins[fit_at.back()] >= o.refit_seconds)
      fit_at.push_back(k);
  }
  std::map<std::string, std::vector<double>> predictions;
  std::map<std::string, double> fit_seconds;
  size_t training_rows = 0;
  for (size_t f = 0; f < fit_at.size(); ++f) {
    const double cutoff = origins[fit_at[f]];
    size_t train_end = 0;
    while (train_end < train.rows.size() && train.rows[train_end].origin_seconds + h <= cutoff) {
      ++train_end;
    }
    if (train_end == 0) {
      return InvalidArgumentError("no training rows before " + fleet::FormatTime(cutoff) +
                                  ": move --split later");
    }
    training_rows = std::max(training_rows, train_end);
    const Landmarks tr = SliceLandmarks(train, p, 0, train_end);
    const double seg_begin_t = origins[fit_at[f]];
    const double seg_end_t = f + 1 < fit_at.size() ? origins[fit_at[f + 1]] : 1e300;
    size_t b =
        std::lower_bound(test.rows.begin(), test.rows.end(), seg_begin_t,
                         [](const LandmarkRow& r, double t) { return r.origin_seconds < t; }) -
        test.rows.begin();
    size_t e =
        std::lower_bound(test.rows.begin(), test.rows.end(), seg_end_t,
                         [](const LandmarkRow& r, double t) { return r.origin_seconds < t; }) -
        test.rows.begin();
    const Landmarks te = SliceLandmarks(test, p, b, e);
    for (const std::string& n : names) {
      const double s = Now();
      auto model = MakeModel(n);
      TITAN_RETURN_IF_ERROR_CTX(model->Fit(tr, space), "fitting at " + fleet::FormatDate(cutoff));
      std::vector<double> pr = model->Predict(te);
      auto& all = predictions[n];
      all.resize(test.rows.size());
      std::copy(pr.begin(), pr.end(), all.begin() + b);
      fit_seconds[n] += Now() - s;
    }
  }
  const double t_metrics = Now();
  json out;
  const std::string default_model =
      std::find(names.begin(), names.end(), kDefaultModel) != names.end() ? kDefaultModel
                                                                          : names.front();
  out["default_model"] = default_model;
  json models = json::object();
  std::map<std::string, Metrics> metrics;
  for (const std::string& n : names) {
    std::vector<ScoredRow> rows(test.rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      rows[i] = {origin_of[i], test.rows[i].follow_seconds, test.rows[i].event, predictions[n][i],
                 test.rows[i].component};
    }
    metrics[n] = Evaluate(rows, h);
    models[n] = metrics[n].ToJson();
  }
  out["models"] = models;
  json units = json::object();
  for (size_t k = 0; k < test.unit_values.size(); ++k) {
    const std::string key = space.options.unit_keys[k];
    json um = json::object();
    for (const std::string& n : names) {
      um[n] = Evaluate(ByUnit(test, origin_of, predictions[n], static_cast<int>(k)), h).ToJson();
    }
    units[key] = {{"models", um}};
  }
  out["units"] = units;
  if (metrics.count("cox_batch_age") && metrics.count(default_model)) {
    const Metrics& d = metrics[default_model];
    const Metrics& c = metrics["cox_batch_age"];
    out["default_vs_cox_batch_age"] = {
        {"c_index_gain", d.c_index - c.c_index},
        {"lift_at_0.1_ratio", d.lift_at.at(0.1) / c.lift_at.at(0.1)}};
  }
  out["horizon_days"] = h / kDaySeconds;
  out["every_days"] = o.every_seconds / kDaySeconds;
  out["refit_days"] = o.refit_seconds / kDaySeconds;
  out["split"] = fleet::FormatTime(o.split_seconds);
  out["origins"] = origins.size();
  out["fits"] = fit_at.size();
  out["training_rows"] = training_rows;
  out["test_rows"] = test.rows.size();
  out["features"] = space.names;
  json secs = {{"features", t_features - t0}, {"total", Now() - t0}};
  for (const auto& [n, s] : fit_seconds) secs["fit_predict_" + n] = s;
  secs["metrics"] = Now() - t_metrics;
  out["seconds"] = secs;
  return out;
}

std::string FormatBacktest(const json& b) {
  std::string out = fmt::format(
      "backtest  {} origins from {} every {:.0f} d, horizon {:.0f} d, refit every {:.0f} d "
      "({} fits), {} scored rows\n",
      b["origins"].get<int64_t>(), b["split"].get<std::string>(), b["every_days"].get<double>(),
      b["horizon_days"].get<double>(), b["refit_days"].get<double>(), b["fits"].get<int64_t>(),
      b["test_rows"].get<int64_t>());
  auto table = [&](const std::string& title, const json& models) {
    out += "\n" + title + "\n";
    out +=
        fmt::format("  {:<17} {:>7} {:>7} {:>6} {:>8} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}\n",
                    "model", "c_index", "c_uno", "auc", "brier", "slope", "prec1%", "prec5%",
                    "prec10%", "rec10%", "lift1%", "lift10%");
    auto v = [](const json& j) { return j.is_null() ? NAN : j.get<double>(); };
    for (const auto& [name, m] : models.items()) {
      out += fmt::format(
          "  {:<17} {:>7.3f} {:>7.3f} {:>6.3f} {:>8.5f} {:>6.2f} {:>7.3f} {:>7.3f} {:>7.3f} "
          "{:>7.3f} "
          "{:>7.2f} {:>7.2f}{}\n",
          name, v(m["c_index"]), v(m["c_index_uno"]), v(m["auc"]), v(m["brier"]),
          v(m["calibration_slope"]), v(m["precision_at"]["0.01"]), v(m["precision_at"]["0.05"]),
          v(m["precision_at"]["0.1"]), v(m["recall_at"]["0.1"]), v(m["lift_at"]["0.01"]),
          v(m["lift_at"]["0.1"]), name == b["default_model"] ? "  (default)" : "");
    }
  };
  table("per component", b["models"]);
  for (const auto& [key, u] : b["units"].items()) table("per " + key, u["models"]);
  if (b.contains("default_vs_cox_batch_age")) {
    const json& d = b["default_vs_cox_batch_age"];
    out += fmt::format("\ndefault vs cox_batch_age: c_index {:+.3f}, lift@10% x{:.2f}\n",
                       d["c_index_gain"].get<double>(), d["lift_at_0.1_ratio"].get<double>());
  }
  return out;
}

}  // namespace titan::predict
