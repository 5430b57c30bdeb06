#include "src/load/stats.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/text.h"

namespace titan::load {

std::string_view MetricName(Metric metric) {
  switch (metric) {
    case Metric::kTtft:
      return "ttft";
    case Metric::kItl:
      return "itl";
    case Metric::kTpot:
      return "tpot";
    case Metric::kE2e:
      return "e2e";
  }
  return "?";
}

namespace {

int64_t NearestRank(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  if (q <= 0) return sorted.front();
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

void Fill(Distribution* d, const std::function<int64_t(double)>& at) {
  if (d->count > 0) {
    for (double q : kCurveQuantiles) d->curve.emplace_back(q, at(q));
  }
  d->min = at(0);
  d->p50 = at(0.5);
  d->p90 = at(0.9);
  d->p95 = at(0.95);
  d->p99 = at(0.99);
  d->p999 = at(0.999);
  d->max = at(1);
}

}  // namespace

const std::vector<double> kCurveQuantiles = [] {
  std::vector<double> q;
  for (int i = 0; i <= 19; ++i) q.push_back(i * 0.05);
  for (double tail : {0.97, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999, 1.0}) {
    q.push_back(tail);
  }
  return q;
}();

namespace {

double Value(const Distribution& d, double quantile) {
  return quantile < 0 ? d.mean : static_cast<double>(d.At(quantile));
}

}  // namespace

int64_t Distribution::At(double q) const {
  if (!sorted.empty() || count == 0) return NearestRank(sorted, q);
  // Built from a histogram: the nearest quantile kept.
  const std::pair<double, int64_t> kept[] = {{0, min},    {0.5, p50},    {0.9, p90}, {0.95, p95},
                                             {0.99, p99}, {0.999, p999}, {1, max}};
  for (const auto& [quantile, value] : kept) {
    if (q <= quantile) return value;
  }
  return max;
}

Distribution Summarize(std::vector<int64_t> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  long double sum = 0;
  for (int64_t v : values) sum += v;
  d.mean = static_cast<double>(sum / values.size());
  d.sorted = std::move(values);
  Fill(&d, [&](double q) { return NearestRank(d.sorted, q); });
  return d;
}

Distribution Summarize(const LatencyHistogram& histogram) {
  Distribution d;
  d.count = histogram.count();
  d.mean = histogram.Mean();
  Fill(&d, [&](double q) { return histogram.ValueAtQuantile(q); });
  return d;
}

Result<Slo> ParseSlo(std::string_view text) {
  Slo slo;
  auto bad = [&](std::string_view part, std::string_view why) {
    return InvalidArgumentError(
        fmt::format("bad SLO part '{}' in '{}': {}; expected a comma-separated list of "
                    "QUANTILE_METRIC=DURATION "
                    "(quantile p50|p90|p95|p99|p999|max|mean, metric ttft|itl|tpot|e2e), e.g. "
                    "p99_ttft=500ms,p99_itl=50ms, and optionally errors=PERCENT%",
                    part, text, why));
  };
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view part = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) return bad(part, "no '='");
    std::string_view key = part.substr(0, eq);
    std::string_view value = part.substr(eq + 1);
    SloGate gate;
    gate.text = std::string(part);
    if (key == "errors") {
      double percent = 0;
      if (!value.ends_with("%") || !ParseDouble(value.substr(0, value.size() - 1), &percent) ||
          percent < 0 || percent > 100) {
        return bad(part, "the error rate is a percentage such as 1%");
      }
      gate.is_error_rate = true;
      gate.max_error_rate = percent / 100;
      slo.gates.push_back(gate);
      continue;
    }
    size_t underscore = key.find('_');
    if (underscore == std::string_view::npos) return bad(part, "no quantile before the metric");
    std::string_view quantile = key.substr(0, underscore);
    std::string_view metric = key.substr(underscore + 1);
    static const std::map<std::string_view, double> kQuantiles = {
        {"p50", 0.5},    {"p90", 0.9}, {"p95", 0.95}, {"p99", 0.99},
        {"p999", 0.999}, {"max", 1.0}, {"mean", -1.0}};
    auto q = kQuantiles.find(quantile);
    if (q == kQuantiles.end()) return bad(part, "unknown quantile");
    gate.quantile = q->second;
    if (metric == "ttft") {
      gate.metric = Metric::kTtft;
    } else if (metric == "itl") {
      gate.metric = Metric::kItl;
    } else if (metric == "tpot") {
      gate.metric = Metric::kTpot;
    } else if (metric == "e2e") {
      gate.metric = Metric::kE2e;
    } else {
      return bad(part, "unknown metric");
    }
    if (!ParseDurationNs(value, &gate.threshold_ns)) {
      return bad(part, "the threshold is a duration such as 500ms or 2s");
    }
    int64_t* per_request = gate.metric == Metric::kTtft   ? &slo.ttft_ns
                           : gate.metric == Metric::kItl  ? &slo.itl_ns
                           : gate.metric == Metric::kTpot ? &slo.tpot_ns
                                                          : &slo.e2e_ns;
    if (*per_request == 0 || gate.threshold_ns < *per_request) *per_request = gate.threshold_ns;
    slo.gates.push_back(gate);
  }
  if (slo.gates.empty()) return bad(text, "no gate");
  return slo;
}

bool Slo::Met(const RequestRecord& r, const RunRecords& run) const {
  if (!r.ok()) return false;
  if (ttft_ns > 0 && (r.first_token_ns == kNever || r.first_token_ns - r.planned_ns > ttft_ns)) {
    return false;
  }
  if (e2e_ns > 0 && r.end_ns - r.planned_ns > e2e_ns) return false;
  if (tpot_ns > 0 && r.output_tokens > 1 && r.last_token_ns != kNever &&
      (r.last_token_ns - r.first_token_ns) / (r.output_tokens - 1) > tpot_ns) {
    return false;
  }
  if (itl_ns > 0) {
    for (uint32_t i = 0; i < r.itl_count; ++i) {
      if (run.itl_ns[r.itl_begin + i] > itl_ns) return false;
    }
  }
  return true;
}

Summary Summarize(const RunRecords& run, const SummaryOptions& options) {
  Summary s;
  s.client_cpu_seconds = run.client_cpu_seconds;
  const auto& records = run.records;
  s.planned = records.size();
  std::vector<int64_t> ttft, ttft_send, e2e, e2e_send, tpot, lag, wait;
  std::array<uint64_t, 3> sources{};
  int64_t first_planned = records.empty() ? 0 : records.front().planned_ns;
  int64_t last_planned = first_planned;
  for (const RequestRecord& r : records) {
    first_planned = std::min(first_planned, r.planned_ns);
    last_planned = std::max(last_planned, r.planned_ns);
    if (r.dispatched_ns > 0 || r.sent_ns != kNever) lag.push_back(r.dispatched_ns - r.planned_ns);
    if (r.slot_ns != kNever) wait.push_back(r.slot_ns - r.dispatched_ns);
    if (!r.ok()) {
      ++s.failed;
      ++s.errors_by_class[static_cast<size_t>(r.error)];
      continue;
    }
    ++s.completed_ok;
    ++sources[static_cast<size_t>(r.tokens_from)];
    s.prompt_tokens += r.prompt_tokens;
    s.output_tokens += r.output_tokens;
    if (r.content_chunks > 0) s.streamed = true;
    if (r.first_token_ns != kNever) {
      ttft.push_back(r.first_token_ns - r.planned_ns);
      ttft_send.push_back(r.first_token_ns - r.sent_ns);
    }
    e2e.push_back(r.end_ns - r.planned_ns);
    e2e_send.push_back(r.end_ns - r.sent_ns);
    if (r.output_tokens > 1 && r.last_token_ns != kNever && r.content_chunks > 1) {
      tpot.push_back((r.last_token_ns - r.first_token_ns) / (r.output_tokens - 1));
    }
  }
  s.tokens_from =
      static_cast<TokenSource>(std::max_element(sources.begin(), sources.end()) - sources.begin());
  s.ttft = Summarize(std::move(ttft));
  s.ttft_from_send = Summarize(std::move(ttft_send));
  s.e2e = Summarize(std::move(e2e));
  s.e2e_from_send = Summarize(std::move(e2e_send));
  s.tpot = Summarize(std::move(tpot));
  s.schedule_lag = Summarize(std::move(lag));
  s.queue_wait = Summarize(std::move(wait));
  if (run.itl_truncated) {
    s.itl = Summarize(run.itl_histogram);
    s.itl_from_histogram = true;
  } else {
    s.itl = Summarize(run.itl_ns);
  }

  // The schedule's length: as asked (--duration), else from the first to the last planned send.
  const int64_t schedule_ns = run.planned_duration_ns > 0
                                  ? run.planned_duration_ns
                                  : std::max<int64_t>(last_planned - first_planned, kNsPerMs);
  s.duration_s = NsToSeconds(schedule_ns);
  s.elapsed_s = NsToSeconds(std::max<int64_t>(run.elapsed_ns, kNsPerMs));
  s.offered_rate = s.planned / s.duration_s;
  s.achieved_rate = s.completed_ok / s.elapsed_s;
  s.output_tokens_per_s = s.output_tokens / s.elapsed_s;
  s.input_tokens_per_s = s.prompt_tokens / s.elapsed_s;

  // Validity.
  s.lag_bound_ns = options.lag_bound_ns;
  if (s.lag_bound_ns == 0) {
    const int64_t median = s.streamed ? s.ttft.p50 : s.e2e.p50;
    s.lag_bound_ns = std::max<int64_t>(5 * kNsPerMs, median / 100);
  }
  if (s.schedule_lag.p99 > s.lag_bound_ns) {
    s.valid = false;
    s.invalid_reasons.push_back(fmt::format(
        "schedule lag p99 {} is over the bound {}: the client could not send at the planned "
        "times (lower the rate, add --threads, or give titan load its own cores)",
        FormatDurationShort(s.schedule_lag.p99), FormatDurationShort(s.lag_bound_ns)));
  }
  if (run.waiting_full) {
    s.valid = false;
    s.invalid_reasons.push_back(fmt::format(
        "{} requests were waiting for one of the --max-concurrency {} slots, so the schedule "
        "paused, later requests were sent late and those planned after the end of --duration "
        "were not sent: the rate is far above what the cap carries (lower the rate or raise the "
        "cap)",
        run.max_waiting, run.max_concurrency));
  }
  // Requests the client never sent did not load the server as planned: the run measured a
  // lighter load than it claims (the probe saw 85% unsent and exit 0). 1% is let pass.
  const uint64_t not_sent = s.errors_by_class[static_cast<size_t>(RequestError::kNotSent)];
  if (not_sent * 100 > s.planned) {
    s.valid = false;
    s.invalid_reasons.push_back(fmt::format(
        "{} of the {} planned requests were never sent before --duration and --drain ended: "
        "the client or its --max-concurrency cap could not keep the schedule (lower the rate, "
        "raise the cap or give --drain more time)",
        not_sent, s.planned));
  }
  if (s.planned > 0 && s.completed_ok == 0) {
    s.valid = false;
    s.invalid_reasons.push_back(fmt::format(
        "none of the {} requests succeeded, so nothing was measured (see the errors: is the "
        "server at --url, and does it take this request?)",
        s.planned));
  }
  if (s.planned == 0 && !run.stopped_early) {
    s.valid = false;
    s.invalid_reasons.push_back(
        "no request was planned: the arrival schedule has none within --duration (lengthen "
        "--duration or raise --rate)");
  }
  if (run.stopped_early) s.invalid_reasons.push_back("stopped early: the outcome was decided");

  // SLO.
  for (const SloGate& gate : options.slo.gates) {
    GateResult result{gate};
    if (gate.is_error_rate) {
      result.measured = s.planned ? static_cast<double>(s.failed) / s.planned : 0;
      result.passed = result.measured <= gate.max_error_rate;
    } else {
      const Distribution& d = gate.metric == Metric::kTtft   ? s.ttft
                              : gate.metric == Metric::kItl  ? s.itl
                              : gate.metric == Metric::kTpot ? s.tpot
                                                             : s.e2e;
      result.measured = Value(d, gate.quantile);
      // Failed requests count as missing the latency SLO: a run that fails every request
      // must not pass on the latency of none.
      result.passed = d.count > 0 && result.measured <= gate.threshold_ns &&
                      (s.planned == 0 || static_cast<double>(s.failed) / s.planned <=
                                             (gate.quantile > 0 ? 1 - gate.quantile : 0.5));
    }
    s.slo_passed = s.slo_passed && result.passed;
    s.gates.push_back(result);
  }
  if (!options.slo.empty() && s.planned > 0) {
    uint64_t met = 0;
    for (const RequestRecord& r : records) met += options.slo.Met(r, run) ? 1 : 0;
    s.slo_attainment = static_cast<double>(met) / s.planned;
    s.goodput_rps = met / s.elapsed_s;
  }

  // Timeline, one bucket per second of the run.
  const int64_t seconds = run.elapsed_ns / kNsPerSecond + 1;
  if (seconds > 0 && seconds < 10'000'000) {
    s.timeline.resize(static_cast<size_t>(seconds));
    std::vector<std::vector<int64_t>> ttft_by_second(s.timeline.size());
    for (size_t i = 0; i < s.timeline.size(); ++i) s.timeline[i].second = static_cast<int64_t>(i);
    auto bucket = [&](int64_t t) {
      return std::clamp<int64_t>(t / kNsPerSecond, 0, static_cast<int64_t>(s.timeline.size()) - 1);
    };
    std::vector<std::pair<int64_t, int>> edges;
    edges.reserve(records.size() * 2);
    for (const RequestRecord& r : records) {
      ++s.timeline[bucket(r.planned_ns)].planned;
      if (r.end_ns == kNever) continue;
      SecondBucket& end = s.timeline[bucket(r.end_ns)];
      if (r.ok()) {
        ++end.completed;
        end.output_tokens += r.output_tokens;
        if (r.first_token_ns != kNever) {
          ttft_by_second[bucket(r.end_ns)].push_back(r.first_token_ns - r.planned_ns);
        }
      } else {
        ++end.errors;
      }
      edges.push_back({r.dispatched_ns, +1});
      edges.push_back({r.end_ns, -1});
    }
    std::sort(edges.begin(), edges.end());
    int64_t open = 0;
    for (const auto& [t, d] : edges) {
      open += d;
      SecondBucket& b = s.timeline[bucket(t)];
      b.in_flight_max =
          std::max<uint64_t>(b.in_flight_max, static_cast<uint64_t>(std::max<int64_t>(open, 0)));
    }
    for (size_t i = 0; i < s.timeline.size(); ++i) {
      auto& v = ttft_by_second[i];
      if (!v.empty()) {
        std::sort(v.begin(), v.end());
        s.timeline[i].ttft_p50_ns = NearestRank(v, 0.5);
        s.timeline[i].ttft_p99_ns = NearestRank(v, 0.99);
      }
      s.peak_output_tokens_per_s =
          std::max<double>(s.peak_output_tokens_per_s, s.timeline[i].output_tokens);
    }
  }
  return s;
}

}  // namespace titan::load
