#include "src/gateway/telemetry.h"

#include <iterator>
#include <map>

#include <fmt/format.h>

#include "src/base/atomic_file.h"
#include "src/base/clock.h"
#include "src/metrics/exposition.h"

namespace titan::gateway {

namespace {

std::vector<double> LatencyBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
          0.5,    1,     2.5,    5,     10,   30,    60,   120};
}

const SignalDesc kQueueDepth{"titan_gateway_queue_depth",
                             "Requests waiting in the gateway's queue",
                             SignalKind::kGauge,
                             {"class"},
                             {},
                             false};
const SignalDesc kInflight{"titan_gateway_inflight",
                           "Requests sent to a replica and not finished",
                           SignalKind::kGauge,
                           {"replica"},
                           {},
                           false};
const SignalDesc kReady{"titan_gateway_replica_ready",
                        "1 when the replica gets traffic",
                        SignalKind::kGauge,
                        {"replica"},
                        {},
                        false};
const SignalDesc kInflightLimit{"titan_gateway_inflight_limit",
                                "Requests the gateway sends a replica at once (adaptive)",
                                SignalKind::kGauge,
                                {"replica"},
                                {},
                                false};
const SignalDesc kBatchSize{"titan_gateway_batch_size",
                            "Client requests merged per upstream batch",
                            SignalKind::kGauge,
                            {},
                            {1, 2, 4, 8, 16, 32, 64, 128, 256},
                            false};
const SignalDesc kQueueSeconds{"titan_gateway_queue_seconds",
                               "Time a request waited for a seat",
                               SignalKind::kGauge,
                               {},
                               LatencyBuckets(),
                               false};
const SignalDesc kTtftSeconds{"titan_gateway_ttft_seconds",
                              "Time to the first token (streams) or the answer, at the gateway",
                              SignalKind::kGauge,
                              {},
                              LatencyBuckets(),
                              false};
const SignalDesc kE2eSeconds{"titan_gateway_e2e_seconds",
                             "Time from arrival to the last byte",
                             SignalKind::kGauge,
                             {},
                             LatencyBuckets(),
                             false};
const SignalDesc kSloMet{"titan_gateway_slo_met_ratio",
                         "1 when an admitted request met ttft_slo; the window mean is attainment",
                         SignalKind::kGauge,
                         {},
                         {},
                         false};
const SignalDesc kRequests{"titan_gateway_requests_total",
                           "Answers sent, by status class",
                           SignalKind::kCounter,
                           {"code"},
                           {},
                           false};
const SignalDesc kRejections{"titan_gateway_rejections_total",
                             "Requests refused, by reason",
                             SignalKind::kCounter,
                             {"reason"},
                             {},
                             false};
const SignalDesc kEjections{"titan_gateway_ejections_total",
                            "Times a replica was ejected",
                            SignalKind::kCounter,
                            {"replica"},
                            {},
                            false};
const SignalDesc kUpstreamErrors{"titan_gateway_upstream_errors_total",
                                 "Requests a replica failed (connect, reset, 5xx, garbage)",
                                 SignalKind::kCounter,
                                 {"replica"},
                                 {},
                                 false};
const SignalDesc kRetries{"titan_gateway_retries_total",
                          "Requests retried on another replica before their first byte",
                          SignalKind::kCounter,
                          {},
                          {},
                          false};
const SignalDesc kCompletionTokens{"titan_gateway_completion_tokens_total",
                                   "Completion tokens relayed (usage, else streamed chunks)",
                                   SignalKind::kCounter,
                                   {},
                                   {},
                                   false};

const SignalDesc kStalled{"titan_gateway_replica_stalled",
                          "1 while the replica is stalled: busy and making no progress",
                          SignalKind::kGauge,
                          {"replica"},
                          {},
                          false};
const SignalDesc kStalls{"titan_gateway_stalls_total",
                         "Times a replica was found stalled",
                         SignalKind::kCounter,
                         {"replica"},
                         {},
                         false};
const SignalDesc kStallDetection{"titan_gateway_stall_detection_seconds",
                                 "A stall's silence when it was detected (since the replica's "
                                 "last progress)",
                                 SignalKind::kGauge,
                                 {},
                                 LatencyBuckets(),
                                 false};
const SignalDesc kHedges{"titan_gateway_hedges_total",
                         "Hedged requests: a second attempt on another replica (reason: delay, "
                         "the first token was late; rescue, the replica stalled)",
                         SignalKind::kCounter,
                         {"reason"},
                         {},
                         false};
const SignalDesc kHedgeWins{"titan_gateway_hedge_wins_total",
                            "Hedged requests answered by the hedge",
                            SignalKind::kCounter,
                            {"reason"},
                            {},
                            false};
const SignalDesc kHedgesRefused{"titan_gateway_hedges_refused_total",
                                "Hedges and rescues that were due but not sent (budget, no_seat)",
                                SignalKind::kCounter,
                                {"why"},
                                {},
                                false};
const SignalDesc kHedgePromptTokens{"titan_gateway_hedge_prompt_tokens_total",
                                    "Prompt tokens of hedged and rescued attempts",
                                    SignalKind::kCounter,
                                    {},
                                    {},
                                    false};
const SignalDesc kPromptTokens{"titan_gateway_prompt_tokens_total",
                               "Prompt tokens of admitted requests (estimated): the hedge "
                               "budget's base",
                               SignalKind::kCounter,
                               {},
                               {},
                               false};

}  // namespace

Telemetry::Telemetry() : registry_(RegistryOptions{0, 0, 5000}) {
  batch_size = registry_.GetOrCreate(kBatchSize, {}, 0);
  queue_seconds = registry_.GetOrCreate(kQueueSeconds, {}, 0);
  ttft_seconds = registry_.GetOrCreate(kTtftSeconds, {}, 0);
  e2e_seconds = registry_.GetOrCreate(kE2eSeconds, {}, 0);
  slo_met = registry_.GetOrCreate(kSloMet, {}, 0);
  retries = registry_.GetOrCreate(kRetries, {}, 0);
  completion_tokens = registry_.GetOrCreate(kCompletionTokens, {}, 0);
  stall_detection_seconds = registry_.GetOrCreate(kStallDetection, {}, 0);
  hedge_prompt_tokens = registry_.GetOrCreate(kHedgePromptTokens, {}, 0);
  prompt_tokens = registry_.GetOrCreate(kPromptTokens, {}, 0);
}

Status Telemetry::Open(const std::string& event_log_path) {
  return log_.Open(event_log_path, "gateway", MonoNowNs());
}

Series* Telemetry::QueueDepth(const std::string& c) {
  return registry_.GetOrCreate(kQueueDepth, {c}, 0);
}
Series* Telemetry::Inflight(const std::string& r) {
  return registry_.GetOrCreate(kInflight, {r}, 0);
}
Series* Telemetry::Ready(const std::string& r) { return registry_.GetOrCreate(kReady, {r}, 0); }
Series* Telemetry::InflightLimit(const std::string& r) {
  return registry_.GetOrCreate(kInflightLimit, {r}, 0);
}
Series* Telemetry::Ejections(const std::string& r) {
  return registry_.GetOrCreate(kEjections, {r}, 0);
}
Series* Telemetry::UpstreamErrors(const std::string& r) {
  return registry_.GetOrCreate(kUpstreamErrors, {r}, 0);
}
Series* Telemetry::Stalled(const std::string& r) { return registry_.GetOrCreate(kStalled, {r}, 0); }
Series* Telemetry::Stalls(const std::string& r) { return registry_.GetOrCreate(kStalls, {r}, 0); }
Series* Telemetry::Hedges(std::string_view reason) {
  return registry_.GetOrCreate(kHedges, {std::string(reason)}, 0);
}
Series* Telemetry::HedgeWins(std::string_view reason) {
  return registry_.GetOrCreate(kHedgeWins, {std::string(reason)}, 0);
}
Series* Telemetry::HedgesRefused(std::string_view why) {
  return registry_.GetOrCreate(kHedgesRefused, {std::string(why)}, 0);
}
Series* Telemetry::Rejections(std::string_view reason) {
  return registry_.GetOrCreate(kRejections, {std::string(reason)}, 0);
}
Series* Telemetry::Requests(int status) {
  return registry_.GetOrCreate(kRequests, {fmt::format("{}xx", status / 100)}, 0);
}

std::string Telemetry::RenderMetrics(std::string_view accept) {
  ExpositionOptions options;
  options.format = NegotiateFormat(accept);
  options.now_ns = WallNowNs();
  options.stale_after_ns = INT64_MAX / 2;  // the gateway's gauges are current by construction
  std::string out;
  out.reserve(16 << 10);
  RenderExposition(registry_, options, &out);
  return out;
}

void Telemetry::Event(const std::string& type, const std::string& replica, nlohmann::json fields) {
  if (!replica.empty()) fields["replica"] = replica;
  events_.push_back({WallNowNs(), type, replica, fields.dump()});
  if (events_.size() > kMaxEvents) events_.pop_front();
  log_.Write(type, std::move(fields));
  ++events_written_;
}

void Telemetry::Counter(const std::string& name, int64_t wall_ns, double value) {
  uint32_t id = 0;
  while (id < counter_names_.size() && counter_names_[id] != name) ++id;
  if (id == counter_names_.size()) counter_names_.push_back(name);
  counters_.push_back({wall_ns, value, id});
  if (counters_.size() > kMaxCounterSamples) counters_.pop_front();
}

Status Telemetry::WritePerfetto(const std::string& path) const {
  constexpr int kPid = 20;
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  fmt::format_to(std::back_inserter(out),
                 "\n{{\"ph\":\"M\",\"pid\":{},\"tid\":0,\"name\":\"process_name\",\"args\":{{"
                 "\"name\":\"titan gateway\"}}}}",
                 kPid);
  std::map<std::string, int> tracks;  // replica -> tid
  auto track = [&](const std::string& replica) {
    auto [it, fresh] = tracks.emplace(replica, static_cast<int>(tracks.size()) + 1);
    if (fresh) {
      fmt::format_to(std::back_inserter(out),
                     ",\n{{\"ph\":\"M\",\"pid\":{},\"tid\":{},\"name\":\"thread_name\",\"args\":{{"
                     "\"name\":{}}}}}",
                     kPid, it->second,
                     nlohmann::json(replica.empty() ? "gateway" : replica).dump());
    }
    return it->second;
  };
  for (const InstantEvent& e : events_) {
    const int tid = track(e.replica);
    fmt::format_to(std::back_inserter(out),
                   ",\n{{\"ph\":\"i\",\"s\":\"t\",\"pid\":{},\"tid\":{},\"ts\":{},\"name\":{},"
                   "\"args\":{}}}",
                   kPid, tid, e.wall_ns / 1000, nlohmann::json(e.type).dump(), e.args);
  }
  for (const CounterSample& c : counters_) {
    fmt::format_to(std::back_inserter(out),
                   ",\n{{\"ph\":\"C\",\"pid\":{},\"ts\":{},\"name\":{},\"args\":{{\"value\":{}}}}}",
                   kPid, c.wall_ns / 1000, nlohmann::json(counter_names_[c.name]).dump(), c.value);
  }
  out += "\n]}\n";
  return WriteFileAtomically(path, out);
}

}  // namespace titan::gateway
