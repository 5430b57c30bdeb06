#include "src/agent/correlator.h"

#include <algorithm>
#include <cmath>

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

struct Movement {
  double sigma;
  std::string text;
};

// Label value of `name` in a series, or "".
std::string_view LabelOf(const Series& s, std::string_view name) {
  const auto& names = s.desc().label_names;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return s.labels()[i];
  }
  return "";
}

}  // namespace

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
  const Detection& d = event->detection;
  const std::string& name = source.desc().name;
  const int64_t window_from = d.start_ns - options_.lookbehind_ns;
  const int64_t baseline_from = window_from - options_.baseline_ns;

  // 1. The headline.
  std::string headline;
  const double delta = d.peak - d.baseline;
  const std::string delta_text =
      (delta >= 0 ? "+" : "-") + FormatSignalValue(name, std::fabs(delta));
  const std::string_view rank = LabelOf(source, "rank");
  // The steps the transient spans, and the one at its peak (the sample furthest from baseline).
  int64_t first_step = -1, last_step = -1, peak_step = -1;
  if (!rank.empty()) {
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
    for (const AppEvent& e : log_.AppEventsBetween(d.start_ns - 1, d.end_ns + 1)) {
      if (e.kind != wire::EventKind::kStepEnd || std::to_string(e.rank) != rank) continue;
      if (first_step < 0) first_step = e.step;
      last_step = e.step;
      if (e.time_ns == peak_time) peak_step = e.step;
    }
    if (peak_step < 0) peak_step = last_step;
  }
  if (name == "titan_step_duration_seconds" && peak_step >= 0) {
    const std::string which = first_step == last_step
                                  ? fmt::format("step {} on rank {}", peak_step, rank)
                                  : fmt::format("steps {}-{} on rank {}: step {}", first_step,
                                                last_step, rank, peak_step);
    // "+240 ms over its baseline" for a slow step, "65 ms under its baseline" for a fast one.
    const std::string versus =
        delta >= 0 ? fmt::format("{} over", delta_text)
                   : fmt::format("{} under", FormatSignalValue(name, std::fabs(delta)));
    headline = fmt::format("{} took {}, {} its baseline ({}, {})", which,
                           FormatSignalValue(name, d.peak), versus, Sigma(d.score), d.detector);
  } else {
    headline = fmt::format("{} {} to {} ({} vs baseline {}, {}, {}, {} ms)", source.Key(),
                           d.direction, FormatSignalValue(name, d.peak), delta_text,
                           FormatSignalValue(name, d.baseline), Sigma(d.score), d.detector,
                           (d.end_ns - d.start_ns) / 1'000'000);
  }

  if (d.period > 0) {
    headline += fmt::format(", recurring every {} {}", d.period,
                            name == "titan_step_duration_seconds" ? "steps" : "samples");
  }

  // 2. Other signals that moved in [start - lookbehind, end].
  std::vector<Movement> moved;
  std::vector<RecordedPoint> points;
  for (const Series* other : registry_.AllSeries()) {
    if (other == &source || other->desc().kind != SignalKind::kGauge) continue;
    // The agent's own health signals (titan_collector_*, titan_agent_*) are not causes.
    const std::string& family = other->desc().name;
    if (family.starts_with("titan_collector_") || family.starts_with("titan_agent_")) continue;
    points.clear();
    other->RecorderRange(baseline_from, d.end_ns, &points);
    double sum = 0, sum_sq = 0;
    size_t n = 0;
    double peak = 0, peak_dev = 0;
    bool any_in_window = false;
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
    for (const RecordedPoint& p : points) {
      if (p.time_ns < window_from) continue;
      any_in_window = true;
      const double dev = std::fabs(p.value - mean);
      if (dev > peak_dev) {
        peak_dev = dev;
        peak = p.value;
      }
    }
    if (!any_in_window) continue;
    const double sigma = peak_dev / spread;
    if (sigma < options_.min_sigma) continue;
    const std::string& other_name = other->desc().name;
    moved.push_back(
        {sigma, fmt::format("{} {} to {} (baseline {}, {})", other->Key(),
                            peak >= mean ? "rose" : "fell", FormatSignalValue(other_name, peak),
                            FormatSignalValue(other_name, mean), Sigma(sigma))});
  }
  std::sort(moved.begin(), moved.end(),
            [](const Movement& a, const Movement& b) { return a.sigma > b.sigma; });
  if (moved.size() > options_.max_related) moved.resize(options_.max_related);

  // 3. Application events (not steps: those are the rhythm, not news) around the transient.
  std::vector<std::string> app;
  for (const AppEvent& e : log_.AppEventsBetween(window_from, d.end_ns)) {
    if (e.kind == wire::EventKind::kStepBegin || e.kind == wire::EventKind::kStepEnd ||
        e.kind == wire::EventKind::kHeartbeat) {
      continue;
    }
    const int64_t before_ms = (d.start_ns - e.time_ns) / 1'000'000;
    std::string when = before_ms >= 0 ? fmt::format("{} ms before", before_ms)
                                      : fmt::format("{} ms into it", -before_ms);
    std::string what(wire::EventKindName(e.kind));
    if (e.name[0] != '\0') {
      what += " '";
      what.append(e.name, strnlen(e.name, wire::kNameBytes));
      what += "'";
    }
    // Marks and other events sent without a step carry step -1: leave it out.
    const std::string where = e.step >= 0 ? fmt::format("rank {}, step {}", e.rank, e.step)
                                          : fmt::format("rank {}", e.rank);
    app.push_back(fmt::format("{} ({}) {}", what, where, when));
    if (app.size() >= options_.max_related) break;
  }

  event->related.clear();
  event->summary = headline;
  for (Movement& m : moved) {
    event->summary += "; " + m.text;
    event->related.push_back(std::move(m.text));
  }
  for (std::string& a : app) {
    event->summary += "; " + a;
    event->related.push_back(std::move(a));
  }
}

}  // namespace titan
