// Report section for a titan agent recorder dump (Perfetto JSON, src/agent/recorder_dump.h): the
// signals around each transient with the transient marked, and the ranks' steps and checkpoints
// on the same time axis.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "src/report/fields.h"
#include "src/report/sections.h"

namespace titan::report {

namespace {

constexpr size_t kMaxSignalPlots = 24;
constexpr size_t kMaxSeriesPerPlot = 8;
// Recorder dump process ids (src/agent/recorder_dump.cc).
constexpr int kSignalsPid = 1, kRanksPid = 2, kTransientsPid = 3;

struct Slice {
  double t, dur;  // s since the dump's start, s
  int tid;
  std::string name, detail;
};

double Number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      return std::stod(v.get<std::string>());
    } catch (const std::exception&) {
    }
  }
  return kNaN;
}

// "titan_cpu_utilization_ratio{cpu=\"total\"}" -> "titan_cpu_utilization_ratio".
std::string FamilyOf(const std::string& key) { return key.substr(0, key.find('{')); }

// (ts us, cumulative value) -> (ts us, increase per second); a counter reset gives a gap.
std::vector<std::pair<double, double>> RatePerSecond(
    const std::vector<std::pair<double, double>>& points) {
  std::vector<std::pair<double, double>> rates;
  for (size_t i = 1; i < points.size(); ++i) {
    const double dt = (points[i].first - points[i - 1].first) / 1e6;
    const double dv = points[i].second - points[i - 1].second;
    rates.emplace_back(points[i].first, dt > 0 && dv >= 0 ? dv / dt : kNaN);
  }
  return rates;
}

}  // namespace

void AddAgentDump(const Input& input, Report* report) {
  const Fields doc(input.doc, input.path);
  const nlohmann::json& events = doc.Array("traceEvents");
  std::map<std::string, std::vector<std::pair<double, double>>> series;  // key -> (ts us, value)
  std::vector<Slice> steps, checkpoints, transients;
  double t0 = std::numeric_limits<double>::infinity();
  for (const nlohmann::json& e : events) {
    if (!e.is_object()) continue;
    const double ts = e.contains("ts") ? Number(e["ts"]) : kNaN;
    if (std::isfinite(ts)) t0 = std::min(t0, ts);
  }
  if (!std::isfinite(t0)) t0 = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const nlohmann::json& e = events[i];
    if (!e.is_object()) continue;
    const std::string ph = e.value("ph", "");
    const int pid = e.value("pid", 0);
    const double ts = e.contains("ts") ? Number(e["ts"]) : kNaN;
    if (!std::isfinite(ts)) continue;
    if (ph == "C" && pid == kSignalsPid) {
      const auto args = e.find("args");
      if (args == e.end() || !args->is_object() || !args->contains("value")) continue;
      series[e.value("name", "?")].emplace_back(ts, Number((*args)["value"]));
    } else if (ph == "X") {
      // A transient's args carry the agent's own one-line summary; other slices their fields.
      const auto args = e.find("args");
      std::string detail;
      if (args != e.end() && args->is_object() && args->contains("summary") &&
          (*args)["summary"].is_string()) {
        detail = (*args)["summary"].get<std::string>();
      } else if (args != e.end()) {
        detail = args->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
      Slice s{(ts - t0) / 1e6, e.contains("dur") ? Number(e["dur"]) / 1e6 : 0, e.value("tid", 0),
              e.value("name", ""), std::move(detail)};
      if (pid == kRanksPid) (s.name == "checkpoint" ? checkpoints : steps).push_back(std::move(s));
      if (pid == kTransientsPid) transients.push_back(std::move(s));
    }
  }
  Section section("Agent recorder dump", input.path);
  section.Stats(
      {{"signals", static_cast<double>(series.size())},
       {"transients", static_cast<double>(transients.size()), transients.empty() ? "ok" : "warn"},
       {"steps", static_cast<double>(steps.size())},
       {"checkpoints", static_cast<double>(checkpoints.size())}});
  std::vector<Mark> marks;
  for (const Slice& c : checkpoints)
    marks.push_back({c.t, c.t + std::max(c.dur, 1e-3), "", "info"});
  for (const Slice& t : transients)
    marks.push_back({t.t, t.t + std::max(t.dur, 1e-3), t.name.substr(0, 32), "bad"});

  if (!transients.empty()) {
    Table table{"Transients",
                "What the agent detected, with the evidence it gathered.",
                {"at s", "lasted s", "signal", "detail"},
                {}};
    for (const Slice& t : transients)
      table.rows.push_back({t.t, t.dur, t.name, t.detail.substr(0, 400)});
    section.Add(std::move(table));
  }
  if (!steps.empty()) {
    std::map<int, std::vector<const Slice*>> by_rank;
    for (const Slice& s : steps) by_rank[s.tid].push_back(&s);
    Plot plot;
    plot.title = "Step time per rank";
    plot.note =
        "Each point is a step, at its end. Shaded: checkpoints (blue) and transients (red).";
    plot.x = {"time since dump start", "s"};
    plot.y = {"step time", "ms", true};
    std::set<double> times;
    for (const Slice& s : steps) times.insert(s.t + s.dur);
    plot.xs.assign(times.begin(), times.end());
    size_t shown = 0;
    for (auto& [rank, list] : by_rank) {
      if (++shown > kMaxRankLines) break;
      std::vector<double> column(plot.xs.size(), kNaN);
      for (const Slice* s : list) {
        column[std::lower_bound(plot.xs.begin(), plot.xs.end(), s->t + s->dur) - plot.xs.begin()] =
            s->dur * 1e3;
      }
      plot.series.push_back({fmt::format("rank {}", rank), "ms", "points"});
      plot.ys.push_back(std::move(column));
    }
    if (by_rank.size() > kMaxRankLines) {
      plot.note +=
          fmt::format(" The first {} of {} ranks are shown.", kMaxRankLines, by_rank.size());
    }
    plot.marks = marks;
    section.Add(std::move(plot));
  }

  // Counters (Prometheus' _total) are drawn as rates per second: their level says nothing.
  for (auto& [key, points] : series) {
    if (FamilyOf(key).ends_with("_total")) points = RatePerSecond(points);
  }

  // Signals, one plot per metric family; families a transient names first, then the ones that
  // moved most relative to their level.
  std::map<std::string, std::vector<std::string>> families;
  for (auto& [key, points] : series) families[FamilyOf(key)].push_back(key);
  std::vector<std::pair<double, std::string>> ranked;
  for (auto& [family, keys] : families) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const std::string& key : keys) {
      for (auto [ts, v] : series[key]) {
        if (!std::isfinite(v)) continue;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    if (!(hi > lo)) continue;  // flat or empty: nothing to see
    double score = (hi - lo) / (std::fabs(hi) + std::fabs(lo) + 1e-12);
    for (const Slice& t : transients) {
      if (t.name.find(family) != std::string::npos || t.detail.find(family) != std::string::npos)
        score += 10;
    }
    ranked.emplace_back(-score, family);
  }
  std::sort(ranked.begin(), ranked.end());
  if (ranked.size() > kMaxSignalPlots) {
    section.Text(
        fmt::format("{} of {} moving signal families are drawn (those named by a "
                    "transient first, then the most variable).",
                    kMaxSignalPlots, ranked.size()));
    ranked.resize(kMaxSignalPlots);
  }
  for (auto& [score, family] : ranked) {
    std::vector<std::string>& keys = families[family];
    if (keys.size() > kMaxSeriesPerPlot) keys.resize(kMaxSeriesPerPlot);
    std::set<double> times;
    for (const std::string& key : keys) {
      for (auto [ts, v] : series[key]) times.insert(ts);
    }
    Plot plot;
    const bool counter = family.ends_with("_total");
    plot.title = counter ? family + " (rate)" : family;
    plot.x = {"time since dump start", "s"};
    plot.y = {counter ? "per second" : family.substr(family.rfind('_') + 1), ""};
    plot.height = 220;
    std::vector<double> ts_sorted(times.begin(), times.end());
    for (double ts : ts_sorted) plot.xs.push_back((ts - t0) / 1e6);
    for (const std::string& key : keys) {
      std::vector<double> column(ts_sorted.size(), kNaN);
      for (auto [ts, v] : series[key]) {
        column[std::lower_bound(ts_sorted.begin(), ts_sorted.end(), ts) - ts_sorted.begin()] = v;
      }
      const size_t brace = key.find('{');
      plot.series.push_back({brace == std::string::npos ? key : key.substr(brace), ""});
      plot.series.back().span_gaps = true;
      plot.ys.push_back(std::move(column));
    }
    plot.marks = marks;
    section.Add(std::move(plot));
  }
  report->sections.push_back(std::move(section));
}

}  // namespace titan::report
