// Report section for `titan trace analyze --json`: where the time goes per rank and per step,
// who arrives late at collectives, and the largest idle gaps with their cause. Readable at
// 1,000+ ranks: bars per rank stay one bar each, steps show percentiles across ranks, the
// arrival skew is a heatmap, and outliers are named in tables.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "src/report/fields.h"
#include "src/report/sections.h"

namespace titan::report {

namespace {

constexpr double kMs = 1e-6;  // ns -> ms
constexpr size_t kMaxHeatmapRows = 1000;

constexpr std::pair<const char*, const char*> kParts[] = {
    {"compute_ns", "compute"},
    {"exposed_comm_ns", "exposed communication"},
    {"exposed_mem_ns", "exposed memory copies"},
    {"idle_ns", "idle"},
};
constexpr const char* kPartColors[] = {"#2ca02c", "#d62728", "#9467bd", "#bdbdbd"};

struct RankRow {
  double rank;
  double parts[4];  // ms, kParts order
  double wall;      // ms
  std::string verdict;
};

std::vector<Series> PartSeries() {
  std::vector<Series> series;
  for (size_t k = 0; k < 4; ++k) series.push_back({kParts[k].second, "ms", "bars", kPartColors[k]});
  return series;
}

void AddRankBreakdown(const std::vector<RankRow>& rows, Section* section) {
  Plot plot;
  plot.title = "Time per rank";
  plot.note =
      "The whole trace of each rank split into compute, communication and memory copies "
      "not hidden behind compute, and idle GPU time.";
  plot.x = {"rank", ""};
  plot.y = {"time", "ms"};
  plot.series = PartSeries();
  plot.stacked = true;
  plot.ys.assign(4, {});
  for (const RankRow& r : rows) {
    plot.xs.push_back(r.rank);
    for (size_t k = 0; k < 4; ++k) plot.ys[k].push_back(r.parts[k]);
  }
  section->Add(std::move(plot));

  Table spread{"Across ranks (ms)",
               "Percentiles of each part over the ranks.",
               {"part", "min", "p10", "p50", "p90", "max", "rank at max"},
               {}};
  for (size_t k = 0; k < 5; ++k) {
    std::vector<double> v;
    for (const RankRow& r : rows) v.push_back(k < 4 ? r.parts[k] : r.wall);
    const size_t at_max = TopIndices(v, 1).empty() ? 0 : TopIndices(v, 1)[0];
    spread.rows.push_back({k < 4 ? kParts[k].second : "wall", Percentile(v, 0), Percentile(v, 0.1),
                           Percentile(v, 0.5), Percentile(v, 0.9), Percentile(v, 1),
                           rows.empty() ? kNaN : rows[at_max].rank});
  }
  section->Add(std::move(spread));

  std::map<std::string, std::vector<double>> by_verdict;
  for (const RankRow& r : rows) by_verdict[r.verdict].push_back(r.rank);
  Table verdicts{"Verdicts",
                 "What bounds each rank (titan trace analyze's verdict).",
                 {"verdict", "ranks", "which"},
                 {}};
  for (auto& [verdict, ranks] : by_verdict) {
    std::string which;
    for (size_t i = 0; i < ranks.size() && i < 12; ++i) {
      which += fmt::format("{}{}", i ? ", " : "", ranks[i]);
    }
    if (ranks.size() > 12) which += fmt::format(", ... ({} more)", ranks.size() - 12);
    verdicts.rows.push_back({verdict, static_cast<double>(ranks.size()), which});
  }
  section->Add(std::move(verdicts));
}

void AddSteps(const Fields& doc, Section* section) {
  // step number -> per rank (rank, wall ms, parts ms)
  std::map<int64_t, std::vector<std::pair<double, std::array<double, 5>>>> steps;
  const nlohmann::json& ranks = doc.Array("ranks");
  for (size_t i = 0; i < ranks.size(); ++i) {
    const Fields rank = doc.Element("ranks", i);
    const nlohmann::json& list = rank.ArrayOr("steps");
    for (size_t s = 0; s < list.size(); ++s) {
      const Fields step = rank.Element("steps", s);
      std::array<double, 5> v{};
      for (size_t k = 0; k < 4; ++k) v[k] = step.Num(kParts[k].first) * kMs;
      v[4] = step.Num("wall_ns") * kMs;
      steps[step.Int("number")].emplace_back(rank.Num("rank"), v);
    }
  }
  if (steps.empty()) return;
  Plot wall;
  wall.title = "Step time across ranks";
  wall.note =
      "Per step: the fastest, median and slowest rank. A gap between median and slowest "
      "is a straggler; all three rising together is the whole job slowing down.";
  wall.x = {"step", ""};
  wall.y = {"step time", "ms"};
  wall.series = {{"fastest rank", "ms"}, {"median rank", "ms"}, {"slowest rank", "ms"}};
  wall.bands = {{2, 0}};
  wall.ys.assign(3, {});
  Plot parts;
  parts.title = "Step breakdown (median across ranks)";
  parts.x = {"step", ""};
  parts.y = {"time", "ms"};
  parts.series = PartSeries();
  parts.stacked = true;
  parts.ys.assign(4, {});
  Table slow{"Slowest steps",
             "The steps whose slowest rank took longest, and that rank.",
             {"step", "slowest rank", "its time ms", "median ms", "fastest ms"},
             {}};
  std::vector<double> slowest;
  std::vector<std::array<double, 4>> slow_rows;
  for (auto& [number, per_rank] : steps) {
    std::vector<double> walls;
    for (auto& [rank, v] : per_rank) walls.push_back(v[4]);
    wall.xs.push_back(static_cast<double>(number));
    wall.ys[0].push_back(Percentile(walls, 0));
    wall.ys[1].push_back(Percentile(walls, 0.5));
    wall.ys[2].push_back(Percentile(walls, 1));
    parts.xs.push_back(static_cast<double>(number));
    for (size_t k = 0; k < 4; ++k) {
      std::vector<double> v;
      for (auto& [rank, p] : per_rank) v.push_back(p[k]);
      parts.ys[k].push_back(Percentile(v, 0.5));
    }
    const size_t worst = TopIndices(walls, 1)[0];
    slowest.push_back(walls[worst]);
    slow_rows.push_back(
        {static_cast<double>(number), per_rank[worst].first, walls[worst], Percentile(walls, 0.5)});
  }
  for (size_t i : TopIndices(slowest, 8)) {
    slow.rows.push_back(
        {slow_rows[i][0], slow_rows[i][1], slow_rows[i][2], slow_rows[i][3], wall.ys[0][i]});
  }
  section->Add(std::move(wall));
  section->Add(std::move(parts));
  section->Add(std::move(slow));
}

void AddArrivalSkew(const Fields& cross, Section* section) {
  if (!cross.Has("arrival_skew")) return;
  const Fields skew = cross.Object("arrival_skew");
  const nlohmann::json& ranks = skew.Array("ranks");
  const nlohmann::json& steps = skew.Array("column_step");
  const nlohmann::json& counts = skew.Array("column_collectives");
  const nlohmann::json& waits = skew.Array("wait_ns");
  if (ranks.size() != waits.size() || steps.size() != counts.size()) {
    throw InputError(
        fmt::format("{}: ranks/wait_ns or column_step/column_collectives differ in "
                    "length",
                    skew.where()));
  }
  if (steps.empty() || ranks.empty()) return;
  Heatmap map;
  map.title = "Arrival skew: ranks x collectives";
  size_t collectives = 0;
  for (const auto& c : counts) collectives += c.is_number() ? c.get<size_t>() : 0;
  map.note = fmt::format(
      "How long each rank waited at each collective for the last rank to arrive ({} matched "
      "collectives{}). A rank that is always white is the one the others wait for.",
      collectives,
      steps.size() < collectives ? fmt::format(", {} per column, the longest wait "
                                               "shown",
                                               (collectives + steps.size() - 1) / steps.size())
                                 : "");
  map.x = {"collectives in step order", ""};
  map.unit = "ms";
  for (const auto& s : steps)
    map.cols.push_back(fmt::format("step {}", s.is_number() ? s.get<int64_t>() : -1));
  std::vector<std::vector<double>> rows;  // ms per column, NaN: not in any of its collectives
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!waits[r].is_array() || waits[r].size() != steps.size()) {
      throw InputError(fmt::format("{}.wait_ns[{}]: expected an array of {} numbers", skew.where(),
                                   r, steps.size()));
    }
    std::vector<double> row;
    for (const auto& w : waits[r]) {
      const double ns = w.is_number() ? w.get<double>() : -1;
      row.push_back(ns < 0 ? kNaN : ns * kMs);
    }
    rows.push_back(std::move(row));
  }
  auto rank_of = [&](size_t r) { return ranks[r].is_number() ? ranks[r].get<int64_t>() : -1; };
  // Past kMaxHeatmapRows ranks, consecutive ranks share a row holding their shortest wait: the
  // late rank, the one nobody waits less than, stays white.
  const size_t per_row = (rows.size() + kMaxHeatmapRows - 1) / kMaxHeatmapRows;
  for (size_t first = 0; first < rows.size(); first += per_row) {
    const size_t last = std::min(rows.size(), first + per_row) - 1;
    map.rows.push_back(per_row == 1 ? fmt::format("rank {}", rank_of(first))
                                    : fmt::format("ranks {}-{}", rank_of(first), rank_of(last)));
    std::vector<double> row = rows[first];
    for (size_t r = first + 1; r <= last; ++r) {
      for (size_t c = 0; c < row.size(); ++c) {
        if (std::isnan(row[c]) || rows[r][c] < row[c]) row[c] = rows[r][c];
      }
    }
    map.values.push_back(std::move(row));
  }
  if (per_row > 1) {
    map.note += fmt::format(" {} ranks per row, each row their shortest wait.", per_row);
  }
  section->Add(std::move(map));
}

void AddStragglersAndSkew(const Fields& cross, Section* section) {
  const nlohmann::json& stragglers = cross.ArrayOr("stragglers");
  Table table{"Stragglers",
              "Ranks last at collectives often enough to cost a share of each step.",
              {"rank", "times last", "collectives", "cost per step ms"},
              {}};
  for (size_t i = 0; i < stragglers.size(); ++i) {
    const Fields s = cross.Element("stragglers", i);
    table.rows.push_back(
        {s.Num("rank"), s.Num("times_last"), s.Num("matched"), s.Num("cost_per_step_ns") * kMs});
  }
  if (table.rows.empty()) {
    section->Text("No straggler: no rank was last at collectives often enough to matter.", "ok");
  } else {
    section->Add(std::move(table));
  }
  const nlohmann::json& worst = cross.ArrayOr("largest_skew");
  Table skew{
      "Largest arrival skews",
      "",
      {"step", "collective", "process group", "last rank", "skew ms", "cost of the last rank ms"},
      {}};
  for (size_t i = 0; i < worst.size(); ++i) {
    const Fields w = cross.Element("largest_skew", i);
    skew.rows.push_back({w.Num("step"), w.StrOr("collective", ""), w.StrOr("process_group", ""),
                         w.Num("last_rank"), w.Num("skew_ns") * kMs, w.Num("last_cost_ns") * kMs});
  }
  if (!skew.rows.empty()) section->Add(std::move(skew));
}

void AddIdleGaps(const Fields& doc, Section* section) {
  struct Gap {
    double rank, step, length_ms;
    std::string launched_by, next_op, cpu_before;
  };
  std::vector<Gap> gaps;
  const nlohmann::json& ranks = doc.Array("ranks");
  for (size_t i = 0; i < ranks.size(); ++i) {
    const Fields rank = doc.Element("ranks", i);
    const nlohmann::json& list = rank.ArrayOr("largest_idle_gaps");
    for (size_t g = 0; g < list.size(); ++g) {
      const Fields gap = rank.Element("largest_idle_gaps", g);
      gaps.push_back({rank.Num("rank"), gap.NumOr("step", kNaN), gap.Num("length_ns") * kMs,
                      gap.StrOr("launched_by", ""), gap.StrOr("next_op", ""),
                      gap.StrOr("cpu_before", "")});
    }
  }
  if (gaps.empty()) return;
  std::vector<double> lengths;
  for (const Gap& g : gaps) lengths.push_back(g.length_ms);
  Table table{"Largest idle gaps",
              "GPU idle with nothing queued, and what came before and after.",
              {"rank", "step", "idle ms", "ended by a launch from", "next GPU op", "CPU before"},
              {}};
  for (size_t i : TopIndices(lengths, 12)) {
    const Gap& g = gaps[i];
    table.rows.push_back({g.rank, g.step, g.length_ms, g.launched_by, g.next_op.substr(0, 80),
                          g.cpu_before.substr(0, 80)});
  }
  section->Add(std::move(table));
}

}  // namespace

void AddTraceAnalysis(const Input& input, Report* report) {
  const Fields doc(input.doc, input.path);
  const nlohmann::json& ranks = doc.Array("ranks");
  const Fields cross = doc.Object("cross_rank");
  std::vector<RankRow> rows;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const Fields rank = doc.Element("ranks", i);
    const Fields total = rank.Object("total");
    RankRow row{rank.Num("rank"), {}, total.Num("wall_ns") * kMs, rank.StrOr("verdict", "?")};
    for (size_t k = 0; k < 4; ++k) row.parts[k] = total.Num(kParts[k].first) * kMs;
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(),
            [](const RankRow& a, const RankRow& b) { return a.rank < b.rank; });
  Section section(fmt::format("Trace analysis: {} ranks", rows.size()), input.path);
  std::vector<Stat> stats = {{"ranks", static_cast<double>(rows.size())},
                             {"steps", cross.NumOr("steps", kNaN)},
                             {"matched collectives", cross.NumOr("matched", kNaN)},
                             {"stragglers", static_cast<double>(cross.ArrayOr("stragglers").size()),
                              cross.ArrayOr("stragglers").empty() ? "ok" : "bad"}};
  if (!rows.empty()) {
    double wall = 0, idle = 0, comm = 0;
    for (const RankRow& r : rows) {
      wall += r.wall;
      idle += r.parts[3];
      comm += r.parts[1];
    }
    if (wall > 0) {
      stats.push_back({"idle share", fmt::format("{:.1f} %", 100 * idle / wall),
                       idle > 0.3 * wall ? "warn" : ""});
      stats.push_back({"exposed comm share", fmt::format("{:.1f} %", 100 * comm / wall),
                       comm > 0.3 * wall ? "warn" : ""});
    }
  }
  section.Stats(std::move(stats));
  section.Text("Clock: " + doc.StrOr("clock", "?"));
  for (const nlohmann::json& e : doc.ArrayOr("errors")) {
    if (e.is_string()) section.Text(e.get<std::string>(), "bad");
  }
  AddRankBreakdown(rows, &section);
  AddSteps(doc, &section);
  AddArrivalSkew(cross, &section);
  AddStragglersAndSkew(cross, &section);
  AddIdleGaps(doc, &section);
  report->sections.push_back(std::move(section));
}

}  // namespace titan::report
