#include "src/trace/report.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/atomic_file.h"
#include "src/base/csv.h"
#include "src/report/sections.h"
#include "src/trace/analyses/hta_compat.h"

namespace titan::trace {
namespace {

double Ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string Pct(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

std::string Short(std::string_view s, size_t n = 70) {
  if (s.size() <= n) return std::string(s);
  return std::string(s.substr(0, n - 3)) + "...";
}

// The ranks of `r`, in its order (the order of every per-rank vector below).
std::vector<int> RankIds(const AnalysisResult& r) {
  std::vector<int> ids;
  for (const RankSummary& s : r.ranks) ids.push_back(s.rank);
  return ids;
}

// 100 * part / whole, NaN when whole is not positive (left out of percentiles).
double Percent(int64_t part, int64_t whole) {
  if (whole <= 0) return std::numeric_limits<double>::quiet_NaN();
  return 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// The indices of the `n` largest `values` (NaN left out), largest first, ties in index order (so
// rank order where `values` is per rank).
std::vector<size_t> Largest(const std::vector<double>& values, size_t n) {
  std::vector<std::pair<double, size_t>> order;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isnan(values[i])) order.emplace_back(-values[i], i);
  }
  n = std::min(n, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end());
  std::vector<size_t> top;
  for (size_t k = 0; k < n; ++k) top.push_back(order[k].second);
  return top;
}

// The header of a table across ranks: one row per figure, its p50, p90 and max over the ranks.
void PrintAcrossHeader(size_t ranks, FILE* out) {
  std::fprintf(out, "  %-24s %10s %10s %10s  %s\n", fmt::format("across {} ranks", ranks).c_str(),
               "p50", "p90", "max", "rank at max");
}

// One row of that table: `values` has one figure per rank of `ids` (NaN: none for that rank).
void PrintAcrossRow(std::string_view label, const std::vector<double>& values,
                    const std::vector<int>& ids, std::string_view unit, FILE* out) {
  const std::vector<size_t> top = Largest(values, 1);
  if (top.empty()) return;
  auto cell = [&](double v) { return fmt::format("{:.2f}{}", v, unit); };
  std::fprintf(out, "  %-24s %10s %10s %10s  %d\n", std::string(label).c_str(),
               cell(report::Percentile(values, 0.5)).c_str(),
               cell(report::Percentile(values, 0.9)).c_str(), cell(values[top[0]]).c_str(),
               ids[top[0]]);
}

// The (at most) kTextOutliers ranks with the largest positive `values`, named with their values,
// on one line; no line when no value is positive.
void PrintOutliers(std::string_view label, const std::vector<double>& values,
                   const std::vector<int>& ids, std::string_view unit, FILE* out) {
  std::string line;
  for (size_t i : Largest(values, kTextOutliers)) {
    if (!(values[i] > 0)) break;
    line += fmt::format("{}rank {} ({:.2f}{})", line.empty() ? "" : ", ", ids[i], values[i], unit);
  }
  if (!line.empty()) std::fprintf(out, "  %s: %s\n", std::string(label).c_str(), line.c_str());
}

// The row limit of a summarised table (all rows with --full).
size_t RowLimit(const TextOptions& o) {
  return o.full ? std::numeric_limits<size_t>::max() : kTextTopRows;
}

// Whether `n` rows are all printed under `limit`: they fit, or only one is over (the line that
// would count it takes the same room).
bool AllFit(size_t n, size_t limit) { return n <= limit || n - limit == 1; }

// "" when all `n` rows fit in `limit` (AllFit), else ", the <limit> <largest> of <n>[ <what>]"
// for a header.
std::string OfHeader(size_t limit, size_t n, std::string_view largest, std::string_view what) {
  if (AllFit(n, limit)) return "";
  return fmt::format(", the {} {} of {}{}{}", limit, largest, n, what.empty() ? "" : " ", what);
}

// Prints every row in its order when all fit in `limit` (AllFit); else the `limit` rows with the
// largest `key`, largest first, then a line counting the others and saying where they are
// (`where`).
void PrintTop(const auto& rows, size_t limit, const auto& key, const auto& print,
              std::string_view where, FILE* out) {
  if (AllFit(rows.size(), limit)) {
    for (const auto& row : rows) print(row);
    return;
  }
  std::vector<double> keys;
  for (const auto& row : rows) keys.push_back(static_cast<double>(key(row)));
  for (size_t i : Largest(keys, limit)) print(rows[i]);
  std::fprintf(out, "  ... %zu more: see --full or %s\n", rows.size() - limit,
               std::string(where).c_str());
}

void PrintHta(const AnalysisResult& r, const TextOptions& o, FILE* out) {
  const bool per_rank = o.full || r.hta.size() <= kTextRankRows;
  std::fprintf(out, "\nHTA-compatible temporal breakdown (us%s):\n",
               per_rank ? "" : OfHeader(kTextTopRows, r.hta.size(), "most idle", "ranks").c_str());
  std::fprintf(out, "  %-5s %12s %12s %12s %12s %7s %7s %7s\n", "rank", "idle", "compute",
               "non-compute", "kernel", "idle%", "comp%", "other%");
  PrintTop(
      r.hta, per_rank ? r.hta.size() : kTextTopRows,
      [](const HtaRankResult& h) { return h.idle_pct; },
      [&](const HtaRankResult& h) {
        std::fprintf(out, "  %-5d %12.0f %12.0f %12.0f %12.0f %7.2f %7.2f %7.2f\n", h.rank,
                     h.idle_us, h.compute_us, h.non_compute_us, h.kernel_us, h.idle_pct,
                     h.compute_pct, h.non_compute_pct);
      },
      "--csv (hta.temporal_breakdown.csv)", out);
  std::fprintf(out, "HTA-compatible kernel types (all ranks):\n");
  for (const HtaKernelTypeRow& row : HtaKernelTypeTable(r.hta)) {
    std::fprintf(out, "  %-58s %12lld us %5.1f%%\n", row.kernel_type.c_str(),
                 static_cast<long long>(row.sum_us), row.percentage);
  }
  if (per_rank) {
    std::fprintf(out, "HTA-compatible communication/computation overlap:");
    for (const HtaRankResult& h : r.hta) {
      std::fprintf(out, "  rank %d %s%%", h.rank, PyFloat(h.comm_comp_overlap_pct).c_str());
    }
    std::fprintf(out, "\n");
    return;
  }
  std::fprintf(out, "HTA-compatible communication/computation overlap:\n");
  std::vector<double> overlap;
  std::vector<int> ids;
  for (const HtaRankResult& h : r.hta) {
    overlap.push_back(h.comm_comp_overlap_pct);
    ids.push_back(h.rank);
  }
  PrintAcrossHeader(r.hta.size(), out);
  PrintAcrossRow("overlap", overlap, ids, "%", out);
}

// "where the time goes" over many ranks: percentiles of each part and the outlier ranks.
void PrintTimeAcrossRanks(const AnalysisResult& r, FILE* out) {
  const std::vector<int> ids = RankIds(r);
  std::vector<double> wall, compute, comm, mem, idle;
  for (const RankSummary& s : r.ranks) {
    const int64_t w = s.total.wall_ns();
    wall.push_back(Ms(w));
    compute.push_back(Percent(s.total.compute_ns, w));
    comm.push_back(Percent(s.total.exposed_comm_ns, w));
    mem.push_back(Percent(s.total.exposed_mem_ns, w));
    idle.push_back(Percent(s.total.idle_ns, w));
  }
  PrintAcrossHeader(r.ranks.size(), out);
  PrintAcrossRow("steps ms", wall, ids, "", out);
  PrintAcrossRow("compute", compute, ids, "%", out);
  PrintAcrossRow("exp.comm", comm, ids, "%", out);
  PrintAcrossRow("exp.mem", mem, ids, "%", out);
  PrintAcrossRow("idle", idle, ids, "%", out);
  PrintOutliers("slowest", wall, ids, " ms", out);
  PrintOutliers("most idle", idle, ids, "%", out);
}

// Collective waits over many ranks: percentiles and the ranks that cost the others most.
void PrintWaitsAcrossRanks(const AnalysisResult& r, FILE* out) {
  std::vector<double> wait, cost;
  std::vector<int> ids;
  for (const RankWaits& w : r.cross.ranks) {
    wait.push_back(Ms(w.wait_ns));
    cost.push_back(Ms(w.cost_ns));
    ids.push_back(w.rank);
  }
  PrintAcrossHeader(ids.size(), out);
  PrintAcrossRow("waited for later ms", wait, ids, "", out);
  PrintAcrossRow("others waited for it ms", cost, ids, "", out);
  PrintOutliers("others waited most for", cost, ids, " ms", out);
}

// The waits of one collective: every rank that waited, or with many ranks (not --full) the
// kTextOutliers longest and a count of the others.
std::string Waits(const MatchedCollective& m, const TextOptions& o) {
  std::vector<std::pair<int, int64_t>> waited;
  for (const auto& w : m.wait_ns) {
    if (w.second > 0) waited.push_back(w);
  }
  std::string text;
  auto add = [&](const std::pair<int, int64_t>& w) {
    text += fmt::format(" rank {} waited {:.2f} ms;", w.first, Ms(w.second));
  };
  if (o.full || waited.size() <= kTextRankRows) {
    for (const auto& w : waited) add(w);
    return text;
  }
  std::vector<double> ms;
  for (const auto& w : waited) ms.push_back(Ms(w.second));
  for (size_t i : Largest(ms, kTextOutliers)) add(waited[i]);
  return text + fmt::format(" {} more ranks waited (p50 {:.2f} ms);", waited.size() - kTextOutliers,
                            report::Percentile(ms, 0.5));
}

// Launch delays over many ranks: percentiles of each rank's p50, p99 and max.
void PrintLaunchAcrossRanks(const AnalysisResult& r, FILE* out) {
  std::vector<double> p50, p99, max;
  std::vector<int> ids;
  for (const RankSummary& s : r.ranks) {
    if (s.launch_delay.count == 0) continue;
    p50.push_back(s.launch_delay.p50_ns / 1e3);
    p99.push_back(s.launch_delay.p99_ns / 1e3);
    max.push_back(s.launch_delay.max_ns / 1e3);
    ids.push_back(s.rank);
  }
  PrintAcrossHeader(ids.size(), out);
  PrintAcrossRow("rank's p50 us", p50, ids, "", out);
  PrintAcrossRow("rank's p99 us", p99, ids, "", out);
  PrintAcrossRow("rank's max us", max, ids, "", out);
}

// Verdicts over many ranks: how many ranks have each, most common first, each with the
// evidence of its slowest rank.
void PrintVerdictsAcrossRanks(const AnalysisResult& r, FILE* out) {
  std::vector<std::pair<std::string, std::vector<const RankSummary*>>> groups;
  for (const RankSummary& s : r.ranks) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == s.verdict; });
    if (it == groups.end()) it = groups.insert(groups.end(), {s.verdict, {}});
    it->second.push_back(&s);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  for (const auto& [verdict, ranks] : groups) {
    const RankSummary* slowest = *std::max_element(ranks.begin(), ranks.end(),
                                                   [](const RankSummary* a, const RankSummary* b) {
                                                     return a->total.wall_ns() < b->total.wall_ns();
                                                   });
    std::fprintf(out, "  %s: %zu of %zu ranks; slowest, rank %d: %s\n", verdict.c_str(),
                 ranks.size(), r.ranks.size(), slowest->rank, slowest->evidence.c_str());
  }
}

}  // namespace

void PrintErrors(const std::vector<std::string>& errors, const char* prefix, size_t max_shown,
                 FILE* out) {
  const size_t shown = std::min(errors.size(), max_shown);
  for (size_t i = 0; i < shown; ++i) std::fprintf(out, "%s%s\n", prefix, errors[i].c_str());
  if (errors.size() > shown) {
    std::fprintf(out, "%s... and %zu more like these (--json or --full lists every one)\n", prefix,
                 errors.size() - shown);
  }
}

void PrintTextReport(const AnalysisResult& r, const TextOptions& o, FILE* out) {
  double mb = static_cast<double>(r.input_bytes) / 1e6;
  std::fprintf(out, "titan trace: %zu rank(s), %lld step(s), %.1f MB of trace JSON in %.2f s\n",
               r.ranks.size(), static_cast<long long>(r.cross.steps), mb, r.seconds);
  PrintErrors(r.errors, "error: ", o.full ? r.errors.size() : kTextErrors, out);
  PrintErrors(r.warnings, "warning: ", o.full ? r.warnings.size() : kTextErrors, out);
  for (const RankSummary& s : r.ranks) {
    for (const std::string& w : s.warnings) {
      std::fprintf(out, "warning: rank %d (%s): %s\n", s.rank, s.path.c_str(), w.c_str());
    }
  }
  if (r.ranks.empty()) return;
  std::fprintf(out, "clock: %s\n", r.cross.clock.c_str());
  const bool per_rank = o.full || r.ranks.size() <= kTextRankRows;
  const size_t limit = RowLimit(o);

  std::fprintf(out, "\nwhere the time goes (all steps; %s timeline):\n",
               r.ranks.front().has_gpu ? "GPU" : "CPU main-thread");
  if (per_rank) {
    std::fprintf(out, "  %-5s %10s %9s %9s %9s %9s  %s\n", "rank", "steps ms", "compute",
                 "exp.comm", "exp.mem", "idle", "verdict");
    for (const RankSummary& s : r.ranks) {
      int64_t wall = s.total.wall_ns();
      std::fprintf(out, "  %-5d %10.2f %9s %9s %9s %9s  %s\n", s.rank, Ms(wall),
                   Pct(s.total.compute_ns, wall).c_str(),
                   Pct(s.total.exposed_comm_ns, wall).c_str(),
                   Pct(s.total.exposed_mem_ns, wall).c_str(), Pct(s.total.idle_ns, wall).c_str(),
                   s.verdict.c_str());
    }
  } else {
    PrintTimeAcrossRanks(r, out);
  }

  std::vector<std::pair<const RankSummary*, const StepBreakdown*>> steps;
  for (const RankSummary& s : r.ranks) {
    for (const StepBreakdown& b : s.steps) steps.emplace_back(&s, &b);
  }
  std::fprintf(out, "\nper step (ms)%s:\n  %-20s %-5s %9s %9s %9s %9s %9s\n",
               OfHeader(limit, steps.size(), "longest", "rank-steps").c_str(), "step", "rank",
               "wall", "compute", "exp.comm", "exp.mem", "idle");
  PrintTop(
      steps, limit, [](const auto& p) { return p.second->wall_ns(); },
      [&](const auto& p) {
        const StepBreakdown& b = *p.second;
        std::fprintf(out, "  %-20s %-5d %9.2f %9.2f %9.2f %9.2f %9.2f\n", b.name.c_str(),
                     p.first->rank, Ms(b.wall_ns()), Ms(b.compute_ns), Ms(b.exposed_comm_ns),
                     Ms(b.exposed_mem_ns), Ms(b.idle_ns));
      },
      "--csv (steps.csv)", out);
  if (r.ranks.size() > 1) {
    std::fprintf(out, "step-time spread across ranks%s:\n",
                 OfHeader(limit, r.cross.step_spread.size(), "widest", "steps").c_str());
    PrintTop(
        r.cross.step_spread, limit, [](const StepSpread& sp) { return sp.max_ns - sp.min_ns; },
        [&](const StepSpread& sp) {
          std::fprintf(out,
                       "  step %-6lld %9.2f .. %9.2f ms  (spread %.2f ms; fastest rank %d, "
                       "slowest rank %d)\n",
                       static_cast<long long>(sp.step), Ms(sp.min_ns), Ms(sp.max_ns),
                       Ms(sp.max_ns - sp.min_ns), sp.fastest_rank, sp.slowest_rank);
        },
        "--json (cross_rank.step_spread)", out);
  }

  if (r.ranks.size() > 1) {
    std::fprintf(out, "\ncollectives: %lld matched across ranks, %lld seen on one rank only\n",
                 static_cast<long long>(r.cross.matched),
                 static_cast<long long>(r.cross.unmatched));
    if (per_rank) {
      for (const RankWaits& w : r.cross.ranks) {
        std::fprintf(out,
                     "  rank %-4d waited %9.2f ms for later ranks; last at %lld of %lld; others "
                     "waited %.2f ms for it\n",
                     w.rank, Ms(w.wait_ns), static_cast<long long>(w.times_last),
                     static_cast<long long>(w.matched), Ms(w.cost_ns));
      }
    } else {
      PrintWaitsAcrossRanks(r, out);
    }
    if (!r.cross.worst.empty()) std::fprintf(out, "  largest arrival skew:\n");
    for (const MatchedCollective& m : r.cross.worst) {
      std::fprintf(out,
                   "    %s #%lld (group %s, step %lld): skew %.2f ms, last rank %d (alone cost "
                   "%.2f ms);%s\n",
                   m.collective.empty() ? "seq" : m.collective.c_str(),
                   static_cast<long long>(m.key), m.process_group.c_str(),
                   static_cast<long long>(m.step), Ms(m.skew_ns), m.last_rank, Ms(m.last_cost_ns),
                   Waits(m, o).c_str());
    }
    std::fprintf(
        out, "stragglers%s:", OfHeader(limit, r.cross.stragglers.size(), "costliest", "").c_str());
    if (r.cross.stragglers.empty()) std::fprintf(out, " none\n");
    std::fprintf(out, "\n");
    PrintTop(
        r.cross.stragglers, limit, [](const Straggler& st) { return st.cost_per_step_ns; },
        [&](const Straggler& st) {
          std::fprintf(
              out,
              "  rank %d: last at %lld of %lld collectives; others wait %.2f ms per step for it\n",
              st.rank, static_cast<long long>(st.times_last), static_cast<long long>(st.matched),
              Ms(st.cost_per_step_ns));
        },
        "--json (cross_rank.stragglers)", out);
  }

  std::vector<std::pair<int, const IdleGap*>> gaps;
  for (const RankSummary& s : r.ranks) {
    for (const IdleGap& g : s.top_gaps) gaps.emplace_back(s.rank, &g);
  }
  std::fprintf(out, "\nlargest idle gaps%s:\n",
               OfHeader(limit, gaps.size(), "longest", "kept").c_str());
  PrintTop(
      gaps, limit, [](const auto& p) { return p.second->length_ns; },
      [&](const auto& p) {
        const IdleGap& g = *p.second;
        std::string launch;
        if (g.launch_after_gap_ns >= 0) {
          launch =
              fmt::format("; launched {:.2f} ms after the gap began", Ms(g.launch_after_gap_ns));
        }
        std::fprintf(
            out, "  rank %-4d step %-6lld %9.2f ms  before %s%s%s%s\n", p.first,
            static_cast<long long>(g.step), Ms(g.length_ns), Short(g.next_op, 60).c_str(),
            g.launched_by.empty() ? ""
                                  : (" (launched by " + Short(g.launched_by, 50) + ")").c_str(),
            launch.c_str(),
            g.cpu_before.empty() ? "" : ("; CPU was in " + Short(g.cpu_before, 50)).c_str());
      },
      "--csv (idle_gaps.csv)", out);
  bool any_launch = false;
  for (const RankSummary& s : r.ranks) any_launch = any_launch || s.launch_delay.count > 0;
  if (any_launch) {
    std::fprintf(out, "launch delay (GPU start minus launch call start):\n");
    if (per_rank) {
      for (const RankSummary& s : r.ranks) {
        const Distribution& d = s.launch_delay;
        std::fprintf(out, "  rank %-4d n=%lld p50 %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us\n",
                     s.rank, static_cast<long long>(d.count), d.p50_ns / 1e3, d.p90_ns / 1e3,
                     d.p99_ns / 1e3, d.max_ns / 1e3);
      }
    } else {
      PrintLaunchAcrossRanks(r, out);
    }
  }
  std::fprintf(out, "\nverdicts:\n");
  if (per_rank) {
    for (const RankSummary& s : r.ranks) {
      std::fprintf(out, "  rank %d: %s: %s\n", s.rank, s.verdict.c_str(), s.evidence.c_str());
    }
  } else {
    PrintVerdictsAcrossRanks(r, out);
  }
  if (o.hta_compat) PrintHta(r, o, out);
}

std::string TextReport(const AnalysisResult& r, const TextOptions& o) {
  char* buffer = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buffer, &size);
  if (f == nullptr) return "";
  PrintTextReport(r, o, f);
  std::fclose(f);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

std::string JsonReport(const AnalysisResult& r, bool hta_compat) {
  using nlohmann::json;
  json j;
  j["ranks_analysed"] = r.ranks.size();
  j["input_bytes"] = r.input_bytes;
  j["seconds"] = r.seconds;
  j["errors"] = r.errors;
  j["warnings"] = r.warnings;
  j["clock"] = r.cross.clock;
  json ranks = json::array();
  auto step_json = [](const StepBreakdown& b) {
    return json{{"name", b.name},
                {"number", b.number},
                {"wall_ns", b.wall_ns()},
                {"compute_ns", b.compute_ns},
                {"exposed_comm_ns", b.exposed_comm_ns},
                {"exposed_mem_ns", b.exposed_mem_ns},
                {"idle_ns", b.idle_ns}};
  };
  for (const RankSummary& s : r.ranks) {
    json rank{{"rank", s.rank},
              {"path", s.path},
              {"format", std::string(TraceFormatName(s.format))},
              {"has_gpu", s.has_gpu},
              {"input_bytes", s.input_bytes},
              {"ops", s.ops},
              {"warnings", s.warnings},
              {"verdict", s.verdict},
              {"evidence", s.evidence},
              {"total", step_json(s.total)},
              {"dataloader_ns", s.dataloader_ns},
              {"launch_delay_ns",
               {{"count", s.launch_delay.count},
                {"p50", s.launch_delay.p50_ns},
                {"p90", s.launch_delay.p90_ns},
                {"p99", s.launch_delay.p99_ns},
                {"max", s.launch_delay.max_ns}}},
              {"import",
               {{"events", s.stats.events},
                {"complete_events", s.stats.complete_events},
                {"unknown_category", s.stats.unknown_category},
                {"negative_durations", s.stats.negative_durations},
                {"missing_fields", s.stats.missing_fields},
                {"malformed_events",
                 {{"ph", s.stats.malformed_ph},
                  {"ts", s.stats.malformed_ts},
                  {"dur", s.stats.malformed_dur}}}}}};
    json steps = json::array();
    for (const StepBreakdown& b : s.steps) steps.push_back(step_json(b));
    rank["steps"] = steps;
    json gaps = json::array();
    for (const IdleGap& g : s.top_gaps) {
      gaps.push_back({{"step", g.step},
                      {"length_ns", g.length_ns},
                      {"begin_ns", g.begin_ns},
                      {"next_op", g.next_op},
                      {"launched_by", g.launched_by},
                      {"cpu_before", g.cpu_before},
                      {"launch_after_gap_ns", g.launch_after_gap_ns}});
    }
    rank["largest_idle_gaps"] = gaps;
    rank["collectives"] = s.collectives.size();
    ranks.push_back(rank);
  }
  j["ranks"] = ranks;
  json cross{
      {"matched", r.cross.matched}, {"unmatched", r.cross.unmatched}, {"steps", r.cross.steps}};
  json waits = json::array();
  for (const RankWaits& w : r.cross.ranks) {
    waits.push_back({{"rank", w.rank},
                     {"matched", w.matched},
                     {"times_last", w.times_last},
                     {"wait_ns", w.wait_ns},
                     {"cost_ns", w.cost_ns}});
  }
  cross["ranks"] = waits;
  json worst = json::array();
  for (const MatchedCollective& m : r.cross.worst) {
    json wj = json::array();
    for (auto& [rank, ns] : m.wait_ns) wj.push_back({{"rank", rank}, {"wait_ns", ns}});
    worst.push_back({{"process_group", m.process_group},
                     {"collective", m.collective},
                     {"key", m.key},
                     {"step", m.step},
                     {"last_rank", m.last_rank},
                     {"skew_ns", m.skew_ns},
                     {"last_cost_ns", m.last_cost_ns},
                     {"waits", wj}});
  }
  cross["largest_skew"] = worst;
  json stragglers = json::array();
  for (const Straggler& st : r.cross.stragglers) {
    stragglers.push_back({{"rank", st.rank},
                          {"times_last", st.times_last},
                          {"matched", st.matched},
                          {"cost_per_step_ns", st.cost_per_step_ns}});
  }
  cross["stragglers"] = stragglers;
  json spread = json::array();
  for (const StepSpread& sp : r.cross.step_spread) {
    spread.push_back({{"step", sp.step},
                      {"min_ns", sp.min_ns},
                      {"max_ns", sp.max_ns},
                      {"fastest_rank", sp.fastest_rank},
                      {"slowest_rank", sp.slowest_rank}});
  }
  cross["step_spread"] = spread;
  cross["arrival_skew"] = {{"ranks", r.cross.skew.ranks},
                           {"column_step", r.cross.skew.column_step},
                           {"column_collectives", r.cross.skew.column_collectives},
                           {"wait_ns", r.cross.skew.wait_ns}};
  j["cross_rank"] = cross;
  if (hta_compat) {
    json hta = json::array();
    for (const HtaRankResult& h : r.hta) {
      hta.push_back(
          {{"rank", h.rank},
           {"idle_us", h.idle_us},
           {"compute_us", h.compute_us},
           {"non_compute_us", h.non_compute_us},
           {"kernel_us", h.kernel_us},
           {"idle_pctg", h.idle_pct},
           {"compute_pctg", h.compute_pct},
           {"non_compute_pctg", h.non_compute_pct},
           {"comp_comm_overlap_pctg",
            std::isnan(h.comm_comp_overlap_pct) ? json(nullptr) : json(h.comm_comp_overlap_pct)}});
    }
    j["hta_compat"] = hta;
  }
  return j.dump(2);
}

Status WriteCsvReport(const AnalysisResult& r, bool hta_compat, const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoError(errno, fmt::format("creating --csv directory {}", dir));
  }
  // Each table is built in memory and written checked and atomically (a full disk is an error,
  // never a truncated CSV reported as success).
  std::ostringstream f;
  auto write = [&](const char* name) -> Status {
    Status s = WriteFileAtomically(dir + "/" + name, f.str());
    f.str("");
    return s;
  };
  f << "rank,step,wall_ns,compute_ns,exposed_comm_ns,exposed_mem_ns,idle_ns\n";
  for (const RankSummary& s : r.ranks) {
    for (const StepBreakdown& b : s.steps) {
      f << s.rank << ',' << CsvField(b.name) << ',' << b.wall_ns() << ',' << b.compute_ns << ','
        << b.exposed_comm_ns << ',' << b.exposed_mem_ns << ',' << b.idle_ns << '\n';
    }
  }
  TITAN_RETURN_IF_ERROR(write("steps.csv"));
  f << "rank,path,wall_ns,compute_ns,exposed_comm_ns,exposed_mem_ns,idle_ns,wait_ns,times_last,"
       "cost_ns,launch_p50_ns,launch_p99_ns,verdict\n";
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const RankSummary& s = r.ranks[i];
    const RankWaits& w = r.cross.ranks[i];
    f << s.rank << ',' << CsvField(s.path) << ',' << s.total.wall_ns() << ',' << s.total.compute_ns
      << ',' << s.total.exposed_comm_ns << ',' << s.total.exposed_mem_ns << ',' << s.total.idle_ns
      << ',' << w.wait_ns << ',' << w.times_last << ',' << w.cost_ns << ',' << s.launch_delay.p50_ns
      << ',' << s.launch_delay.p99_ns << ',' << CsvField(s.verdict) << '\n';
  }
  TITAN_RETURN_IF_ERROR(write("ranks.csv"));
  f << "rank,step,begin_ns,length_ns,next_op,launched_by,cpu_before,launch_after_gap_ns\n";
  for (const RankSummary& s : r.ranks) {
    for (const IdleGap& g : s.top_gaps) {
      f << s.rank << ',' << g.step << ',' << g.begin_ns << ',' << g.length_ns << ','
        << CsvField(g.next_op) << ',' << CsvField(g.launched_by) << ',' << CsvField(g.cpu_before)
        << ',' << g.launch_after_gap_ns << '\n';
    }
  }
  TITAN_RETURN_IF_ERROR(write("idle_gaps.csv"));
  f << "process_group,collective,key,step,last_rank,skew_ns,last_cost_ns\n";
  for (const MatchedCollective& m : r.cross.worst) {
    f << CsvField(m.process_group) << ',' << m.collective << ',' << m.key << ',' << m.step << ','
      << m.last_rank << ',' << m.skew_ns << ',' << m.last_cost_ns << '\n';
  }
  TITAN_RETURN_IF_ERROR(write("collectives.csv"));
  if (hta_compat) TITAN_RETURN_IF_ERROR(WriteHtaCsvs(r.hta, dir, "hta"));
  return OkStatus();
}

}  // namespace titan::trace
