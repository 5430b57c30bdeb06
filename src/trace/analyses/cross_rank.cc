#include "src/trace/analyses/cross_rank.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "src/base/saturating.h"

namespace titan::trace {
namespace {

struct Arrival {
  int rank_index;
  int64_t start_ns;  // local
  int64_t end_ns;
  int64_t step;
};

using Key = std::tuple<std::string, std::string, int64_t>;

SkewMatrix BuildSkewMatrix(const std::vector<RankSummary>& ranks,
                           const std::vector<MatchedCollective>& matched) {
  SkewMatrix m;
  std::map<int, size_t> row_of;
  for (const RankSummary& s : ranks) {
    row_of.emplace(s.rank, m.ranks.size());
    m.ranks.push_back(s.rank);
  }
  std::vector<const MatchedCollective*> order;
  for (const MatchedCollective& c : matched) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return std::tie(a->step, a->key) < std::tie(b->step, b->key);
  });
  const size_t per_column = std::max<size_t>(
      1, (order.size() + SkewMatrix::kMaxSkewColumns - 1) / SkewMatrix::kMaxSkewColumns);
  const size_t columns = (order.size() + per_column - 1) / per_column;
  m.wait_ns.assign(m.ranks.size(), std::vector<int64_t>(columns, -1));
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t column = i / per_column;
    if (i % per_column == 0) {
      m.column_step.push_back(order[i]->step);
      m.column_collectives.push_back(0);
    }
    m.column_collectives[column]++;
    for (auto [rank, wait] : order[i]->wait_ns) {
      int64_t& cell = m.wait_ns[row_of.at(rank)][column];
      cell = std::max(cell, wait);
    }
  }
  return m;
}

int64_t Median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

CrossRankResult AnalyseAcrossRanks(const std::vector<RankSummary>& ranks, int top_collectives) {
  CrossRankResult r;
  const size_t n = ranks.size();
  bool use_seq = true;
  for (const RankSummary& s : ranks) {
    for (const CollectiveCall& c : s.collectives) use_seq = use_seq && c.seq >= 0;
  }
  std::map<Key, std::vector<Arrival>> calls;
  for (size_t i = 0; i < n; ++i) {
    for (const CollectiveCall& c : ranks[i].collectives) {
      Key key =
          use_seq ? Key{c.process_group, "", c.seq} : Key{c.process_group, c.collective, c.ordinal};
      calls[key].push_back({static_cast<int>(i), c.start_ns, c.end_ns, c.step});
    }
  }

  // Clock offsets (added to each rank's local time).
  std::vector<int64_t> offset(n, 0);
  bool all_wall = n > 0;
  for (const RankSummary& s : ranks) all_wall = all_wall && s.wall_clock;
  if (all_wall) {
    r.clock = "wall clock (Kineto timestamps)";
    for (size_t i = 0; i < n; ++i) offset[i] = ranks[i].epoch_offset_ns;
  } else {
    r.clock = "aligned on collective end times (the traces have no shared clock)";
    // One pass over the arrivals (linear in them; it was ranks x calls x ranks, 25 s for 80k
    // ranks): each rank's differences to rank 0's end of the calls both made.
    std::vector<std::vector<int64_t>> diffs(n);
    for (const auto& [key, arrivals] : calls) {
      const Arrival* ref = nullptr;
      for (const Arrival& a : arrivals) {
        if (a.rank_index == 0) ref = &a;
      }
      if (ref == nullptr) continue;
      for (const Arrival& a : arrivals) {
        if (a.rank_index != 0) diffs[a.rank_index].push_back(SaturatingSub(ref->end_ns, a.end_ns));
      }
    }
    for (size_t i = 1; i < n; ++i) {
      if (!diffs[i].empty()) {
        offset[i] = Median(std::move(diffs[i]));
      } else {
        r.clock += "; rank " + std::to_string(ranks[i].rank) + " shares no collective: not aligned";
      }
    }
  }
  for (size_t i = 0; i < n; ++i) r.clock_offset_ns.emplace_back(ranks[i].rank, offset[i]);

  r.ranks.resize(n);
  for (size_t i = 0; i < n; ++i) r.ranks[i].rank = ranks[i].rank;
  std::vector<MatchedCollective> matched;
  for (auto& [key, arrivals] : calls) {
    if (arrivals.size() < 2) {
      r.unmatched++;
      continue;
    }
    MatchedCollective m;
    m.process_group = std::get<0>(key);
    m.collective = use_seq ? "" : std::get<1>(key);
    m.key = std::get<2>(key);
    m.step = arrivals.front().step;
    std::vector<std::pair<int64_t, int>> at;  // (aligned arrival, rank index)
    for (const Arrival& a : arrivals)
      at.emplace_back(SaturatingAdd(a.start_ns, offset[a.rank_index]), a.rank_index);
    std::sort(at.begin(), at.end());
    int64_t last = at.back().first;
    m.last_rank = ranks[at.back().second].rank;
    m.skew_ns = SaturatingSub(last, at.front().first);
    m.last_cost_ns = SaturatingSub(last, at[at.size() - 2].first);
    for (auto& [t, idx] : at) {
      const int64_t wait = SaturatingSub(last, t);
      m.wait_ns.emplace_back(ranks[idx].rank, wait);
      r.ranks[idx].matched++;
      r.ranks[idx].wait_ns = SaturatingAdd(r.ranks[idx].wait_ns, wait);
    }
    r.ranks[at.back().second].times_last++;
    r.ranks[at.back().second].cost_ns =
        SaturatingAdd(r.ranks[at.back().second].cost_ns, m.last_cost_ns);
    matched.push_back(std::move(m));
  }
  r.matched = static_cast<int64_t>(matched.size());

  // Steps and their spread across ranks.
  std::map<int64_t, std::vector<std::pair<int64_t, int>>> by_step;
  for (const RankSummary& s : ranks) {
    r.steps = std::max<int64_t>(r.steps, static_cast<int64_t>(s.steps.size()));
    for (const StepBreakdown& b : s.steps) by_step[b.number].emplace_back(b.wall_ns(), s.rank);
  }
  std::vector<int64_t> step_walls;
  for (auto& [step, walls] : by_step) {
    std::sort(walls.begin(), walls.end());
    r.step_spread.push_back(
        {step, walls.front().first, walls.back().first, walls.front().second, walls.back().second});
    step_walls.push_back(walls.back().first);
  }
  int64_t median_step = step_walls.empty() ? 0 : Median(step_walls);

  // Stragglers: ranks that are last often enough and cost a noticeable share of a step.
  int64_t steps = std::max<int64_t>(r.steps, 1);
  for (const RankWaits& w : r.ranks) {
    if (w.matched == 0 || w.cost_ns == 0) continue;
    int64_t per_step = w.cost_ns / steps;
    bool often = w.times_last * 4 >= w.matched;
    bool costly = median_step == 0 || SaturatingMul(per_step, 100) >= median_step;
    if (often && costly && n >= 2)
      r.stragglers.push_back({w.rank, w.times_last, w.matched, per_step});
  }
  std::sort(r.stragglers.begin(), r.stragglers.end(), [](const Straggler& a, const Straggler& b) {
    return a.cost_per_step_ns > b.cost_per_step_ns;
  });

  r.skew = BuildSkewMatrix(ranks, matched);
  std::sort(
      matched.begin(), matched.end(),
      [](const MatchedCollective& a, const MatchedCollective& b) { return a.skew_ns > b.skew_ns; });
  if (static_cast<int>(matched.size()) > top_collectives) matched.resize(top_collectives);
  r.worst = std::move(matched);
  return r;
}

}  // namespace titan::trace
