#include "src/predict/features.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace titan::predict {

using fleet::Event;
using fleet::EventKind;

namespace {

constexpr double kShortWindow = 30 * kDaySeconds;
constexpr double kLongWindow = 365 * kDaySeconds;

// Number of values in sorted `v` within (from, to].
int64_t CountIn(const std::vector<double>& v, double from, double to) {
  return std::upper_bound(v.begin(), v.end(), to) - std::upper_bound(v.begin(), v.end(), from);
}

double Log1p(double n) { return std::log1p(n); }

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// The attribute sets of each enter: standing attributes merged with the enter's.
fleet::Attributes StayAttributes(const fleet::FleetHistory& h, const Event& e) {
  return fleet::MergeAttributes(h.components()[e.component].attributes, e.attributes);
}

}  // namespace

int FeatureSpace::Column(const std::string& name) const {
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

FeatureSpace FeatureSpace::Make(const fleet::FleetHistory& history, const FeatureOptions& options) {
  FeatureSpace s;
  s.options = options;
  s.names = {"age_days",           "stay_days",    "comp_failures", "comp_failures_30d",
             "comp_failures_365d", "comp_repairs", "comp_moves"};
  // Attribute levels and their frequency over stays.
  std::map<std::string, std::map<std::string, int64_t>> levels;
  for (const Event& e : history.events()) {
    if (e.kind != EventKind::kEnter) continue;
    for (const auto& [k, v] : StayAttributes(history, e)) ++levels[k][v];
  }
  for (const std::string& unit : options.unit_keys) {
    if (levels.count(unit)) {
      s.names.push_back(unit + "_failures_30d");
      s.names.push_back(unit + "_failures_365d");
    }
  }
  s.names.push_back("fleet_failure_rate_30d");
  for (const auto& [key, counts] : levels) {
    if (std::find(options.unit_keys.begin(), options.unit_keys.end(), key) !=
        options.unit_keys.end()) {
      continue;
    }
    if (counts.size() < 2 || static_cast<int>(counts.size()) > options.max_levels) continue;
    std::string reference;
    int64_t most = -1;
    for (const auto& [level, n] : counts) {
      if (n > most) {
        most = n;
        reference = level;
      }
    }
    OneHot oh{key, {}, s.p()};
    for (const auto& [level, n] : counts) {
      if (level == reference) continue;
      oh.levels.push_back(level);
      s.names.push_back(key + "=" + level);
    }
    s.one_hots.push_back(std::move(oh));
  }
  s.first_covariate_column = s.p();
  for (const std::string& c : history.covariates()) {
    s.names.push_back("cov_" + c);
    s.names.push_back("cov_" + c + "_delta_30d");
  }
  return s;
}

Landmarks BuildLandmarks(const fleet::FleetHistory& history, const FeatureSpace& space,
                         const LandmarkOptions& options) {
  Landmarks out;
  const size_t n = history.components().size();
  const int p = space.p();
  const double horizon = space.options.horizon_seconds;
  const double end = history.end_seconds();
  // Future-facing lookups (outcomes only): each component's failure and stay-boundary times.
  std::vector<std::vector<double>> fails(n), bounds(n);
  std::vector<double> fleet_fails;
  for (const Event& e : history.events()) {
    if (e.kind == EventKind::kFail) {
      fails[e.component].push_back(e.time_seconds);
      fleet_fails.push_back(e.time_seconds);
    } else if (e.kind == EventKind::kEnter || e.kind == EventKind::kLeave) {
      bounds[e.component].push_back(e.time_seconds);
    }
  }
  // Unit keys present (those FeatureSpace made columns for), in its order.
  std::vector<std::string> unit_keys;
  for (const std::string& k : space.options.unit_keys) {
    if (space.Column(k + "_failures_30d") >= 0 && unit_keys.size() < 2) unit_keys.push_back(k);
  }
  out.unit_values.resize(unit_keys.size());
  std::vector<std::unordered_map<std::string, int32_t>> unit_index(unit_keys.size());
  std::vector<std::vector<std::vector<double>>> unit_fails(unit_keys.size());
  const int fleet_col = space.Column("fleet_failure_rate_30d");
  const int unit_col0 = unit_keys.empty() ? -1 : space.Column(unit_keys[0] + "_failures_30d");

  struct State {
    bool in_service = false;
    double first_enter = -1, stay_start = 0;
    int32_t failures_seen = 0, repairs = 0, moves = 0;
    int32_t units[2] = {-1, -1};
    std::vector<int> one_hot_columns;
    size_t pos = 0;  // in `active`
  };
  std::vector<State> st(n);
  std::vector<uint32_t> active;
  // Observed covariates: per component, per covariate, (time, value) in time order.
  const size_t ncov = history.covariates().size();
  std::vector<std::vector<std::vector<std::pair<double, double>>>> cov(
      ncov ? n : 0, std::vector<std::vector<std::pair<double, double>>>(ncov));

  auto emit = [&](double t, size_t origin_index) {
    const double fleet_rate =
        active.empty() ? 0
                       : 1000.0 * static_cast<double>(CountIn(fleet_fails, t - kShortWindow, t)) /
                             static_cast<double>(active.size());
    for (uint32_t c : active) {
      const State& s = st[c];
      // Outcome.
      auto nf = std::upper_bound(fails[c].begin(), fails[c].end(), t);
      auto nb = std::upper_bound(bounds[c].begin(), bounds[c].end(), t);
      const double stop = std::min({nb == bounds[c].end() ? end : *nb, t + horizon, end});
      if (stop <= t) continue;
      const bool event = nf != fails[c].end() && *nf <= stop;
      const double follow = (event ? *nf : stop) - t;
      double weight = 1;
      if (!event && options.non_event_fraction < 1) {
        const double u =
            static_cast<double>(Mix(c * 0x9E3779B97F4A7C15ULL ^ (origin_index + 1)) >> 11) *
            0x1.0p-53;
        if (u >= options.non_event_fraction) continue;
        weight = 1 / options.non_event_fraction;
      }
      LandmarkRow row;
      row.component = c;
      row.origin_seconds = t;
      row.follow_seconds = follow;
      row.event = event;
      row.weight = weight;
      row.units[0] = s.units[0];
      row.units[1] = s.units[1];
      out.rows.push_back(row);
      // Features.
      const size_t base = out.x.size();
      out.x.resize(base + p, 0.0f);
      float* x = &out.x[base];
      x[0] = Log1p((t - s.first_enter) / kDaySeconds);
      x[1] = Log1p((t - s.stay_start) / kDaySeconds);
      const auto own_end = fails[c].begin() + s.failures_seen;
      x[2] = Log1p(s.failures_seen);
      x[3] = Log1p(static_cast<double>(
          own_end - std::upper_bound(fails[c].begin(), own_end, t - kShortWindow)));
      x[4] = Log1p(static_cast<double>(
          own_end - std::upper_bound(fails[c].begin(), own_end, t - kLongWindow)));
      x[5] = Log1p(s.repairs);
      x[6] = Log1p(s.moves);
      for (size_t k = 0; k < unit_keys.size(); ++k) {
        if (s.units[k] < 0) continue;
        const auto& uf = unit_fails[k][s.units[k]];
        x[unit_col0 + 2 * k] = Log1p(static_cast<double>(CountIn(uf, t - kShortWindow, t)));
        x[unit_col0 + 2 * k + 1] = Log1p(static_cast<double>(CountIn(uf, t - kLongWindow, t)));
      }
      x[fleet_col] = Log1p(fleet_rate);
      for (int col : s.one_hot_columns) x[col] = 1;
      for (size_t v = 0; v < ncov; ++v) {
        const auto& obs = cov[c][v];
        if (obs.empty()) continue;
        const double last = obs.back().second;
        auto before =
            std::upper_bound(obs.begin(), obs.end(), std::make_pair(t - kShortWindow, 1e300));
        const double then = before == obs.begin() ? obs.front().second : std::prev(before)->second;
        x[space.first_covariate_column + 2 * v] = last;
        x[space.first_covariate_column + 2 * v + 1] = last - then;
      }
    }
  };

  const auto& origins = options.origins_seconds;
  size_t oi = 0;
  for (const Event& e : history.events()) {
    while (oi < origins.size() && origins[oi] < e.time_seconds) {
      emit(origins[oi], oi);
      ++oi;
    }
    State& s = st[e.component];
    switch (e.kind) {
      case EventKind::kEnter: {
        if (!s.in_service) {
          s.pos = active.size();
          active.push_back(e.component);
        }
        if (s.first_enter < 0) {
          s.first_enter = e.time_seconds;
        } else {
          ++s.moves;  // every stay after the first
        }
        s.in_service = true;
        s.stay_start = e.time_seconds;
        const fleet::Attributes attrs = StayAttributes(history, e);
        for (size_t k = 0; k < unit_keys.size(); ++k) {
          const std::string* v = fleet::FindAttribute(attrs, unit_keys[k]);
          if (!v) {
            s.units[k] = -1;
            continue;
          }
          auto [it, inserted] =
              unit_index[k].try_emplace(*v, static_cast<int32_t>(out.unit_values[k].size()));
          if (inserted) {
            out.unit_values[k].push_back(*v);
            unit_fails[k].emplace_back();
          }
          s.units[k] = it->second;
        }
        s.one_hot_columns.clear();
        for (const FeatureSpace::OneHot& oh : space.one_hots) {
          const std::string* v = fleet::FindAttribute(attrs, oh.key);
          if (!v) continue;
          auto it = std::find(oh.levels.begin(), oh.levels.end(), *v);
          if (it != oh.levels.end()) {
            s.one_hot_columns.push_back(oh.first_column + static_cast<int>(it - oh.levels.begin()));
          }
        }
        break;
      }
      case EventKind::kLeave:
        if (s.in_service) {
          uint32_t last = active.back();
          active[s.pos] = last;
          st[last].pos = s.pos;
          active.pop_back();
          s.in_service = false;
        }
        break;
      case EventKind::kFail:
        ++s.failures_seen;
        for (size_t k = 0; k < unit_keys.size(); ++k) {
          if (s.units[k] >= 0) unit_fails[k][s.units[k]].push_back(e.time_seconds);
        }
        break;
      case EventKind::kRepair:
        ++s.repairs;
        break;
      case EventKind::kObserve:
        for (const auto& [v, value] : e.values)
          cov[e.component][v].emplace_back(e.time_seconds, value);
        break;
    }
  }
  while (oi < origins.size()) {
    emit(origins[oi], oi);
    ++oi;
  }
  return out;
}

}  // namespace titan::predict
