// Report sections for titan run: per job, a timeline of generations, injections, detections and
// decisions, the goodput ledger of each node as stacked bars, and step times per rank (from the
// event log's "steps" windows).
#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "src/report/fields.h"
#include "src/report/sections.h"

namespace titan::report {

namespace {

// Per rank: (time, (median, max)) of each "steps" window.
using PerRankWindows = std::map<int, std::vector<std::pair<double, std::array<double, 2>>>>;

// One line per rank (`column` 0: the window's median, 1: its max), or, beyond kMaxRankLines
// ranks, the median rank's median and the slowest rank's maximum.
Plot PerRankPlot(const std::string& title, const std::string& what, const PerRankWindows& per_rank,
                 const std::string& note, int column) {
  Plot plot;
  plot.title = title;
  plot.x = {"time since start", "s"};
  plot.y = {what, "ms", true};
  std::set<double> times;
  for (const auto& [rank, points] : per_rank) {
    for (const auto& p : points) times.insert(p.first);
  }
  plot.xs.assign(times.begin(), times.end());
  auto column_of = [&](const std::vector<std::pair<double, std::array<double, 2>>>& points,
                       int which) {
    std::vector<double> values(plot.xs.size(), kNaN);
    for (const auto& [t, v] : points) {
      values[std::lower_bound(plot.xs.begin(), plot.xs.end(), t) - plot.xs.begin()] = v[which];
    }
    return values;
  };
  if (per_rank.size() <= kMaxRankLines) {
    plot.note = note;
    for (const auto& [rank, points] : per_rank) {
      plot.series.push_back({fmt::format("rank {}{}", rank, column == 1 ? " (max)" : ""), "ms"});
      plot.series.back().span_gaps = true;
      plot.ys.push_back(column_of(points, column));
    }
    return plot;
  }
  plot.note = fmt::format(
      "{} ranks: the median rank's median and the slowest rank's longest per 5 s window. {}",
      per_rank.size(), note);
  std::vector<std::vector<double>> p50s, maxes;
  for (const auto& [rank, points] : per_rank) {
    p50s.push_back(column_of(points, 0));
    maxes.push_back(column_of(points, 1));
  }
  plot.series = {{"median across ranks", "ms"}, {"slowest rank", "ms"}};
  plot.ys.assign(2, std::vector<double>(plot.xs.size(), kNaN));
  for (size_t i = 0; i < plot.xs.size(); ++i) {
    std::vector<double> a, b;
    for (size_t r = 0; r < p50s.size(); ++r) {
      a.push_back(p50s[r][i]);
      b.push_back(maxes[r][i]);
    }
    plot.ys[0][i] = Percentile(a, 0.5);
    plot.ys[1][i] = Percentile(b, 1);
  }
  for (auto& series : plot.series) series.span_gaps = true;
  return plot;
}

// The ledger's phases in the order they stack (titan run's --ledger-json "seconds").
constexpr std::pair<const char*, const char*> kPhases[] = {
    {"productive", "#2ca02c"}, {"startup", "#1f77b4"}, {"checkpoint", "#17becf"},
    {"detection", "#ff7f0e"},  {"restart", "#9467bd"}, {"lost_work", "#d62728"},
    {"waiting", "#bdbdbd"},
};

struct Job {
  std::string name;
  std::vector<const Input*> logs, ledgers;
};

std::string Describe(const Fields& e, const std::string& type) {
  auto field = [&](const char* key) -> std::string {
    if (!e.Has(key)) return "";
    const nlohmann::json& v = e.json()[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  if (type == "inject") return fmt::format("injected {} on rank {}", field("kind"), field("rank"));
  if (type == "crash")
    return "crash: " + field("reason") + field("signal_name") + " rank " + field("rank");
  if (type == "hang") return "hang: rank " + field("rank");
  if (type == "straggler") return "straggler: rank " + field("rank");
  if (type == "lost") return "lost node(s): " + field("nodes");
  if (type == "decision") return "decision: " + field("action") + " (" + field("reason") + ")";
  if (type == "restart") return "restarted as generation " + field("generation");
  if (type == "checkpoint") return "checkpoint of step " + field("step");
  if (type == "rendezvous") return "rendezvous: generation " + field("generation");
  if (type == "exclude") return "excluded " + field("node") + field("nodes");
  return type;
}

// Marks for the events worth seeing on the time axis: what was done to the job, what titan saw,
// and what it decided.
std::string ToneOf(const std::string& type) {
  if (type == "inject" || type == "preempt") return "warn";
  if (type == "crash" || type == "hang" || type == "straggler" || type == "lost") return "bad";
  if (type == "decision" || type == "exclude") return "info";
  if (type == "restart") return "ok";
  return "";
}

void AddJob(const Job& job, Report* report) {
  struct Event {
    double t;
    std::string node, type, text;
    const nlohmann::json* fields;
  };
  std::vector<Event> events;
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const Input* log : job.logs) {
    for (const nlohmann::json& e : log->doc)
      t0 = std::min(t0, e["time_ns"].is_number() ? e["time_ns"].get<int64_t>() : t0);
  }
  for (const Input* log : job.logs) {
    for (size_t i = 0; i < log->doc.size(); ++i) {
      const Fields e(log->doc[i], fmt::format("{}:{}", log->path, i + 1));
      const std::string type = e.Str("type");
      events.push_back({(e.Int("time_ns") - t0) / 1e9, e.StrOr("node", "?"), type,
                        Describe(e, type), &log->doc[i]});
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.t < b.t; });
  Section section(
      fmt::format("Training run: job {}", job.name),
      fmt::format("{} event log(s), {} ledger(s)", job.logs.size(), job.ledgers.size()));

  // Key figures from the ledgers.
  std::vector<Stat> stats;
  Plot ledger;
  ledger.title = "Goodput ledger per node";
  ledger.note = "Where each node's wall time went; ETTR is the productive share.";
  ledger.y = {"time", "s"};
  ledger.stacked = true;
  for (const auto& [phase, color] : kPhases) ledger.series.push_back({phase, "s", "bars", color});
  ledger.ys.assign(std::size(kPhases), {});
  for (const Input* in : job.ledgers) {
    const Fields l(in->doc, in->path);
    const Fields seconds = l.Object("seconds");
    ledger.x.categories.push_back(l.StrOr("node", "?"));
    ledger.xs.push_back(static_cast<double>(ledger.xs.size()));
    for (size_t k = 0; k < std::size(kPhases); ++k) {
      ledger.ys[k].push_back(seconds.NumOr(kPhases[k].first, 0));
    }
    const double ettr = l.Num("ettr");
    stats.push_back({"ETTR " + l.StrOr("node", "?"), fmt::format("{:.1f} %", 100 * ettr),
                     ettr >= 0.9   ? "ok"
                     : ettr >= 0.7 ? "warn"
                                   : "bad"});
    stats.push_back({"restarts " + l.StrOr("node", "?"), l.NumOr("restarts", kNaN)});
  }
  ledger.x.label = "node";
  size_t injected = 0, detected = 0;
  for (const Event& e : events) {
    injected += e.type == "inject";
    detected += ToneOf(e.type) == "bad";
  }
  stats.push_back({"injected faults", static_cast<double>(injected)});
  stats.push_back({"detections", static_cast<double>(detected)});
  section.Stats(std::move(stats));

  // Timeline: the generation each node runs, checkpoint blocking times, and marks.
  Plot timeline;
  timeline.title = "Timeline: generations, faults, detections and decisions";
  timeline.note =
      "Orange: injected faults; red: what titan detected; blue: its decisions; "
      "green: restarts. Each node's generation is a step line.";
  timeline.x = {"time since start", "s"};
  timeline.y = {"generation", ""};
  timeline.y2 = Axis{"checkpoint blocking", "ms"};
  std::vector<std::string> nodes;
  for (const Event& e : events) {
    if (std::find(nodes.begin(), nodes.end(), e.node) == nodes.end()) nodes.push_back(e.node);
  }
  for (const std::string& node : nodes) {
    timeline.series.push_back({"generation of " + node, "", "step"});
    timeline.series.back().span_gaps = true;
  }
  timeline.series.push_back({"checkpoint blocking", "ms", "points", "#17becf", false, true});
  timeline.ys.assign(timeline.series.size(), {});
  Table table{"Events",
              "Every event of the job's logs but checkpoints and step windows.",
              {"time s", "node", "event", "detail"},
              {}};
  for (const Event& e : events) {
    const Fields f(*e.fields, "event");
    const bool spawn = e.type == "spawn" && f.Has("generation");
    const bool checkpoint = e.type == "checkpoint" && f.Has("blocking_ms");
    if (spawn || checkpoint) {
      timeline.xs.push_back(e.t);
      for (auto& column : timeline.ys) column.push_back(kNaN);
      if (spawn) {
        const size_t k = std::find(nodes.begin(), nodes.end(), e.node) - nodes.begin();
        timeline.ys[k].back() = f.Num("generation");
      } else {
        timeline.ys.back().back() = f.Num("blocking_ms");
      }
    }
    const std::string tone = ToneOf(e.type);
    if (!tone.empty()) timeline.marks.push_back({e.t, std::nullopt, e.text.substr(0, 40), tone});
    if (e.type != "checkpoint" && e.type != "steps") {
      table.rows.push_back({e.t, e.node, e.type, e.text});
    }
  }
  if (!timeline.xs.empty()) {
    // Carry each generation line to the end of the run.
    timeline.xs.push_back(events.back().t);
    for (auto& column : timeline.ys) column.push_back(kNaN);
    for (size_t k = 0; k < nodes.size(); ++k) {
      for (size_t i = timeline.ys[k].size() - 1; i-- > 0;) {
        if (!std::isnan(timeline.ys[k][i])) {
          timeline.ys[k].back() = timeline.ys[k][i];
          break;
        }
      }
    }
    section.Add(std::move(timeline));
  }
  if (!ledger.xs.empty()) section.Add(std::move(ledger));

  // Compute and step times per rank, from the "steps" windows.
  PerRankWindows compute, steps;
  for (const Event& e : events) {
    if (e.type != "steps") continue;
    const Fields w(*e.fields, "steps event");
    const nlohmann::json& ranks = w.ArrayOr("ranks");
    for (size_t i = 0; i < ranks.size(); ++i) {
      const Fields r = w.Element("ranks", i);
      const int rank = static_cast<int>(r.Int("rank"));
      steps[rank].push_back({e.t, {r.Num("p50_ms"), r.Num("max_ms")}});
      if (ranks[i].contains("compute_p50_ms")) {
        compute[rank].push_back({e.t, {r.Num("compute_p50_ms"), r.Num("compute_max_ms")}});
      }
    }
  }
  if (!compute.empty()) {
    section.Add(PerRankPlot(
        "Compute time per rank", "compute time", compute,
        "Each rank's local compute per step (from step begin to its client.mark(\"compute\")), "
        "the median of each 5 s window: under data parallelism every rank waits in the "
        "all-reduce for the slowest, so step times are alike and the late rank stands out here.",
        /*column=*/0));
  }
  if (!steps.empty()) {
    section.Add(PerRankPlot("Step time per rank", "step time", steps,
                            "The longest step of each rank in each 5 s window (the median is in "
                            "the numbers): one slow step still shows.",
                            /*column=*/1));
  }
  section.Add(std::move(table));
  report->sections.push_back(std::move(section));
}

}  // namespace

void AddRuns(const std::vector<const Input*>& files, Report* report) {
  std::map<std::string, Job> jobs;
  std::vector<std::string> order;
  auto job_of = [&](const std::string& name) -> Job& {
    if (!jobs.count(name)) order.push_back(name);
    Job& job = jobs[name];
    job.name = name;
    return job;
  };
  for (const Input* in : files) {
    if (in->kind == InputKind::kRunLedger) {
      job_of(Fields(in->doc, in->path).StrOr("job", "?")).ledgers.push_back(in);
    } else {
      std::string name = "?";
      for (const nlohmann::json& e : in->doc) {
        if (e.contains("job") && e["job"].is_string()) {
          name = e["job"].get<std::string>();
          break;
        }
      }
      job_of(name).logs.push_back(in);
    }
  }
  for (const std::string& name : order) AddJob(jobs[name], report);
}

}  // namespace titan::report
