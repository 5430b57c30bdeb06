#include "src/agent/correlator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "src/client/wire_parse.h"

namespace titan {
namespace {

std::string HumanBytes(double v, std::string_view suffix) {
  static constexpr const char* kUnits[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int u = 0;
  double a = std::fabs(v);
  while (a >= 1000 && u < 5) {
    a /= 1000;
    v /= 1000;
    ++u;
  }
  return fmt::format("{:.3g} {}{}", v, kUnits[u], suffix);
}

// "4.1 sigma"; a baseline with no spread gives absurd scores, shown as ">1000 sigma".
std::string Sigma(double score) {
  return score > 1000 ? std::string(">1000 sigma") : fmt::format("{:.1f} sigma", score);
}

// A signal or application event that moved with the transient, and how well it lines up.
struct Candidate {
  double alignment;  // 1: within the transient; falls to 0 over lookbehind before it
  bool app;          // an application event (ranked before signals of equal alignment)
  double sigma;      // signals: how far it moved
  std::string text;
};

// The steps a member spans (step_end samples of its rank in [start, end] at least half as far
// from baseline as the peak), the one at its peak (the sample furthest from baseline) and when
// the first of them began (-1: unknown).
struct StepSpan {
  int64_t first = -1, last = -1, peak = -1;
  int64_t begin_ns = -1;
};

StepSpan StepsOf(const Series& source, int32_t rank, const Detection& d,
                 const std::vector<AppEvent>& events) {
  StepSpan span;
  if (rank < 0) return span;
  std::vector<RecordedPoint> own;
  source.RecorderRange(d.start_ns, d.end_ns, &own);
  int64_t peak_time = d.end_ns;
  double peak_dev = -1;
  for (const RecordedPoint& p : own) {
    if (std::fabs(p.value - d.baseline) > peak_dev) {
      peak_dev = std::fabs(p.value - d.baseline);
      peak_time = p.time_ns;
    }
  }
  // The steps that count: those at least half as far from baseline as the peak.
  std::vector<int64_t> slow_times;
  for (const RecordedPoint& p : own) {
    if (std::fabs(p.value - d.baseline) >= 0.5 * peak_dev) slow_times.push_back(p.time_ns);
  }
  for (const AppEvent& e : events) {
    if (e.kind != wire::EventKind::kStepEnd || e.rank != rank || e.time_ns < d.start_ns ||
        e.time_ns > d.end_ns ||
        (!slow_times.empty() &&
         std::find(slow_times.begin(), slow_times.end(), e.time_ns) == slow_times.end())) {
      continue;
    }
    if (span.first < 0) span.first = e.step;
    span.last = e.step;
    if (e.time_ns == peak_time) span.peak = e.step;
  }
  if (span.peak < 0) span.peak = span.last;
  for (const AppEvent& e : events) {
    if (span.first >= 0 && e.kind == wire::EventKind::kStepBegin && e.rank == rank &&
        e.step == span.first && e.time_ns <= d.start_ns) {
      span.begin_ns = e.time_ns;
    }
  }
  return span;
}

constexpr std::string_view kStepFamily = "titan_step_duration_seconds";
// StepTracker's robust lateness score per rank, and the score past which a rank straggles.
constexpr std::string_view kStragglerFamily = "titan_straggler_score";
constexpr double kStragglerScore = 3;

// "step 812 on rank 3 took 1.24 s, +240 ms over its baseline (4.1 sigma, zscore)", or for
// other signals "KEY spike to 2.1 GB/s (+2.1 GB/s vs baseline 3 MB/s, 40.0 sigma, mad, 50 ms)".
std::string MemberHeadline(const Series& source, int32_t rank, const Detection& d,
                           const StepSpan& span) {
  const std::string& name = source.desc().name;
  const double delta = d.peak - d.baseline;
  std::string headline;
  if (name == kStepFamily && span.peak >= 0) {
    const std::string which = span.first == span.last
                                  ? fmt::format("step {} on rank {}", span.peak, rank)
                                  : fmt::format("steps {}-{} on rank {}: step {}", span.first,
                                                span.last, rank, span.peak);
    // "+240 ms over its baseline" for a slow step, "65 ms under its baseline" for a fast one.
    const std::string versus = delta >= 0
                                   ? fmt::format("+{} over", FormatSignalValue(name, delta))
                                   : fmt::format("{} under", FormatSignalValue(name, -delta));
    headline = fmt::format("{} took {}, {} its baseline ({}, {})", which,
                           FormatSignalValue(name, d.peak), versus, Sigma(d.score), d.detector);
  } else {
    headline =
        fmt::format("{} {} to {} ({}{} vs baseline {}, {}, {}, {} ms)", source.Key(), d.direction,
                    FormatSignalValue(name, d.peak), delta >= 0 ? "+" : "-",
                    FormatSignalValue(name, std::fabs(delta)), FormatSignalValue(name, d.baseline),
                    Sigma(d.score), d.detector, (d.end_ns - d.start_ns) / 1'000'000);
  }
  if (d.period > 0) {
    headline +=
        fmt::format(", recurring every {} {}", d.period, name == kStepFamily ? "steps" : "samples");
  }
  return headline;
}

// "all 4 ranks" or "ranks 1, 3 (2 of 4)"; "3 series" without ranks.
std::string Who(std::span<const int32_t> ranks, size_t members, size_t peers) {
  if (ranks.empty()) return fmt::format("{} series", members);
  if (ranks.size() >= peers) return fmt::format("all {} ranks", ranks.size());
  return fmt::format("ranks {} ({} of {})", FormatRanks(ranks), ranks.size(), peers);
}

}  // namespace

int32_t RankOf(const Series& s) {
  const auto& names = s.desc().label_names;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "rank" && !s.labels()[i].empty()) {
      return static_cast<int32_t>(std::strtol(s.labels()[i].c_str(), nullptr, 10));
    }
  }
  return -1;
}

std::string FormatRanks(std::span<const int32_t> ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string FormatSignalValue(std::string_view name, double value) {
  if (name.ends_with("_seconds")) {
    if (std::fabs(value) < 1) return fmt::format("{:.3g} ms", value * 1e3);
    return fmt::format("{:.3g} s", value);
  }
  if (name.ends_with("_ratio")) return fmt::format("{:.1f} %", value * 100);
  if (name.ends_with("_bytes_per_second")) return HumanBytes(value, "/s");
  if (name.ends_with("_bytes")) return HumanBytes(value, "");
  return fmt::format("{:.4g}", value);
}

Correlator::Correlator(const MetricRegistry& registry, const EventLog& log,
                       CorrelatorOptions options)
    : registry_(registry), log_(log), options_(options) {}

void Correlator::Explain(const Series& source, TransientEvent* event) const {
  event->members = {TransientMember{source.Key(), RankOf(source), event->detection}};
  const Series* sources[] = {&source};
  Explain(sources, event);
}

void Correlator::Explain(std::span<const Series* const> sources, TransientEvent* event) const {
  const Detection& d = event->detection;
  const std::vector<TransientMember>& members = event->members;
  const Series& first_source = *sources.front();
  const std::string& family = first_source.desc().name;
  const int64_t routine_from = d.start_ns - options_.lookbehind_ns - options_.routine_lookback_ns;
  const std::vector<AppEvent> events = log_.AppEventsBetween(routine_from, d.end_ns + 1);

  // 1. Each member's steps; the transient covers from the begin of the first slow step.
  std::vector<StepSpan> spans;
  int64_t cover_from = d.start_ns, first_step = -1, last_step = -1;
  size_t worst = 0;
  std::vector<int32_t> ranks;
  for (size_t i = 0; i < members.size(); ++i) {
    spans.push_back(StepsOf(*sources[i], members[i].rank, members[i].detection, events));
    const StepSpan& span = spans.back();
    if (span.begin_ns >= 0) cover_from = std::min(cover_from, span.begin_ns);
    if (span.first >= 0 && (first_step < 0 || span.first < first_step)) first_step = span.first;
    last_step = std::max(last_step, span.last);
    if (members[i].detection.score > members[worst].detection.score) worst = i;
    if (members[i].rank >= 0) ranks.push_back(members[i].rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  const int64_t window_from = cover_from - options_.lookbehind_ns;
  const int64_t baseline_from = window_from - options_.baseline_ns;
  auto alignment = [&](int64_t t) {
    if (t >= cover_from) return 1.0;
    return std::max(0.0,
                    1.0 - static_cast<double>(cover_from - t) /
                              static_cast<double>(std::max<int64_t>(options_.lookbehind_ns, 1)));
  };

  // 2. Other signals that moved in [window_from, end]; and how many ranks report this family
  // (those with samples since baseline_from), for "all 4 ranks" and "alone of 4".
  std::vector<Candidate> candidates;
  std::vector<RecordedPoint> points;
  size_t peers = 0;
  int32_t straggler_rank = -1;
  double straggler_score = kStragglerScore;  // the score a straggler exceeds
  for (const Series* other : registry_.AllSeries()) {
    if (other->desc().kind != SignalKind::kGauge) continue;
    const std::string& other_name = other->desc().name;
    const bool member = std::find(sources.begin(), sources.end(), other) != sources.end();
    // The agent's own health signals (titan_collector_*, titan_agent_*) are not causes.
    if (!member &&
        (other_name.starts_with("titan_collector_") || other_name.starts_with("titan_agent_"))) {
      continue;
    }
    points.clear();
    other->RecorderRange(baseline_from, d.end_ns, &points);
    if (other_name == family && RankOf(*other) >= 0 && (member || !points.empty())) {
      ++peers;
    }
    if (member) continue;
    // A member rank late against its peers in the transient is a straggler holding the others.
    if (other_name == kStragglerFamily &&
        std::binary_search(ranks.begin(), ranks.end(), RankOf(*other))) {
      for (const RecordedPoint& p : points) {
        if (p.time_ns >= cover_from && p.value > straggler_score) {
          straggler_score = p.value;
          straggler_rank = RankOf(*other);
        }
      }
    }
    double sum = 0, sum_sq = 0;
    size_t n = 0;
    for (const RecordedPoint& p : points) {
      if (p.time_ns < window_from) {
        sum += p.value;
        sum_sq += p.value * p.value;
        ++n;
      }
    }
    if (n < 5) continue;
    const double mean = sum / static_cast<double>(n);
    const double var = std::max(0.0, sum_sq / static_cast<double>(n) - mean * mean);
    // A floor on the spread so a flat signal moving by a hair is not "40 sigma".
    const double spread = std::max(std::sqrt(var), std::max(std::fabs(mean) * 0.05, 1e-9));
    double peak = 0, peak_dev = 0;
    int64_t onset_ns = -1;  // the first sample in the window that moved min_sigma
    for (const RecordedPoint& p : points) {
      if (p.time_ns < window_from) continue;
      const double dev = std::fabs(p.value - mean);
      if (onset_ns < 0 && dev >= options_.min_sigma * spread) onset_ns = p.time_ns;
      if (dev > peak_dev) {
        peak_dev = dev;
        peak = p.value;
      }
    }
    const double sigma = peak_dev / spread;
    if (onset_ns < 0 || sigma < options_.min_sigma) continue;
    candidates.push_back(
        {alignment(onset_ns), false, sigma,
         fmt::format("{} {} to {} (baseline {}, {})", other->Key(), peak >= mean ? "rose" : "fell",
                     FormatSignalValue(other_name, peak), FormatSignalValue(other_name, mean),
                     Sigma(sigma))});
  }

  // 3. Application events in [window_from, end], not steps (the rhythm, not news) and not
  // routine; one per kind, name and step, with the ranks that sent it.
  using EventKey = std::tuple<int32_t, wire::EventKind, std::string>;  // rank, kind, name
  auto name_of = [](const AppEvent& e) {
    return std::string(e.name, strnlen(e.name, wire::kNameBytes));
  };
  std::map<int32_t, int64_t> steps_of_rank;
  std::map<EventKey, int64_t> sent;
  for (const AppEvent& e : events) {
    if (e.time_ns >= cover_from) continue;
    if (e.kind == wire::EventKind::kStepEnd) ++steps_of_rank[e.rank];
    ++sent[EventKey{e.rank, e.kind, name_of(e)}];
  }
  auto routine = [&](const AppEvent& e) {
    const int64_t steps = steps_of_rank[e.rank];
    return steps >= options_.routine_min_steps &&
           static_cast<double>(sent[EventKey{e.rank, e.kind, name_of(e)}]) >=
               options_.routine_share * static_cast<double>(steps);
  };
  struct Said {
    const AppEvent* first;
    std::vector<int32_t> ranks;
  };
  std::map<std::tuple<wire::EventKind, std::string, int64_t>, Said> said;
  std::vector<std::tuple<wire::EventKind, std::string, int64_t>> said_order;
  for (const AppEvent& e : events) {
    if (e.time_ns < window_from || e.kind == wire::EventKind::kStepBegin ||
        e.kind == wire::EventKind::kStepEnd || e.kind == wire::EventKind::kHeartbeat ||
        routine(e)) {
      continue;
    }
    auto key = std::make_tuple(e.kind, name_of(e), e.step);
    auto [it, added] = said.try_emplace(key, Said{&e, {}});
    if (added) said_order.push_back(key);
    it->second.ranks.push_back(e.rank);
  }
  for (const auto& key : said_order) {
    Said& s = said.at(key);
    const AppEvent& e = *s.first;
    std::sort(s.ranks.begin(), s.ranks.end());
    s.ranks.erase(std::unique(s.ranks.begin(), s.ranks.end()), s.ranks.end());
    const int64_t before_ms = (d.start_ns - e.time_ns) / 1'000'000;
    const std::string when = before_ms >= 0 ? fmt::format("{} ms before", before_ms)
                                            : fmt::format("{} ms into it", -before_ms);
    std::string what(wire::EventKindName(e.kind));
    if (!std::get<1>(key).empty()) what += " '" + std::get<1>(key) + "'";
    const std::string who = s.ranks.size() == 1 ? fmt::format("rank {}", s.ranks[0])
                                                : fmt::format("ranks {}", FormatRanks(s.ranks));
    // Marks and other events sent without a step carry step -1: leave it out.
    const std::string where = e.step >= 0 ? fmt::format("{}, step {}", who, e.step) : who;
    candidates.push_back(
        {alignment(e.time_ns), true, 0, fmt::format("{} ({}) {}", what, where, when)});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.alignment != b.alignment) return a.alignment > b.alignment;
                     if (a.app != b.app) return a.app;
                     return a.sigma > b.sigma;
                   });
  if (candidates.size() > options_.max_related) candidates.resize(options_.max_related);

  // 4. The headline: the event as a whole, then its most extreme member.
  const TransientMember& top = members[worst];
  std::string headline = MemberHeadline(*sources[worst], top.rank, top.detection, spans[worst]);
  const bool steps = family == kStepFamily;
  if (members.size() > 1) {
    const std::string who = Who(ranks, members.size(), peers);
    const bool all = !ranks.empty() && ranks.size() >= peers;
    const bool slow = std::string_view(d.direction) == "spike";
    if (steps && first_step >= 0) {
      headline = fmt::format(
          "{} {} at {}: {}; {}: {}", who, slow ? "slow" : "fast",
          first_step == last_step ? fmt::format("step {}", first_step)
                                  : fmt::format("steps {}-{}", first_step, last_step),
          straggler_rank >= 0
              ? fmt::format("rank {} late against its peers (straggler score {:.1f}): a "
                            "straggler holding the others",
                            straggler_rank, straggler_score)
          : all ? "a common cause, not a straggler"
                : "not one straggler",
          slow ? "slowest" : "fastest", headline);
    } else {
      headline =
          fmt::format("{} {} on {} together; most extreme: {}", family, d.direction, who, headline);
    }
  } else if (steps && top.rank >= 0 && peers > 1) {
    // One slow step is a blip; a straggler is a rank that stays behind its peers.
    const bool slow = std::string_view(d.direction) == "spike";
    const int64_t slow_steps = top.detection.samples;
    headline += fmt::format("; rank {} alone of {} ranks{}", top.rank, peers,
                            !slow             ? ""
                            : slow_steps >= 2 ? fmt::format(", {} steps: a straggler", slow_steps)
                                              : std::string(", one step: a blip, not a straggler"));
  }

  event->related.clear();
  event->summary = headline;
  for (Candidate& c : candidates) {
    event->summary += "; " + c.text;
    event->related.push_back(std::move(c.text));
  }
}

}  // namespace titan
