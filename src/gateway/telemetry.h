// Telemetry: everything titan gateway tells people, through titan's one code path for each:
//  - metrics: a MetricRegistry rendered by src/metrics (gauges carry _window_max, so a 200 ms
//    queue spike survives a 15 s scrape, and _samples histograms for latencies);
//  - events: titan's event-log format (src/supervisor/run_log.h, JSON lines with time_ns, t,
//    node, type): replica state changes (eject, readmit, ...), sheds, retries, process exits,
//    reloads, drain;
//  - a Perfetto (Chrome JSON) trace written at exit: every event as an instant on its
//    replica's track, and queue depth and in-flight counters sampled every scrape tick (at
//    most kMaxCounterSamples samples are kept; the oldest go first).
//
// Metric families (labels):
//   titan_gateway_queue_depth{class}            waiting requests (gauge)
//   titan_gateway_inflight{replica}             requests sent and not finished (gauge)
//   titan_gateway_replica_ready{replica}        1 routable, 0 not (gauge)
//   titan_gateway_inflight_limit{replica}       the (adaptive) per-replica limit (gauge)
//   titan_gateway_batch_size                    members per upstream batch (gauge, histogram)
//   titan_gateway_queue_seconds / ttft_seconds / e2e_seconds   per request (gauge, histogram)
//   titan_gateway_slo_met_ratio                 1/0 per admitted request against ttft_slo;
//                                               _window_mean is the attainment
//   titan_gateway_requests_total{code}          answers by status class (2xx, 4xx, 5xx)
//   titan_gateway_rejections_total{reason}      queue_full, deadline, queue_timeout,
//                                               no_replica, draining, invalid, limit
//   titan_gateway_ejections_total{replica}, titan_gateway_retries_total,
//   titan_gateway_completion_tokens_total, titan_gateway_upstream_errors_total{replica}
//   titan_gateway_replica_stalled{replica}      1 while stalled (gauge)
//   titan_gateway_stalls_total{replica}         stalls detected
//   titan_gateway_stall_detection_seconds       silence at detection (gauge, histogram)
//   titan_gateway_hedges_total{reason}          hedges sent: delay | rescue
//   titan_gateway_hedge_wins_total{reason}      hedged requests the hedge answered
//   titan_gateway_hedges_refused_total{why}     due but not sent: budget | no_seat
//   titan_gateway_hedge_prompt_tokens_total, titan_gateway_prompt_tokens_total (admitted)
//
// Thread safety: none; owned by the gateway's event loop (the registry itself is thread-safe).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/metrics/registry.h"
#include "src/supervisor/run_log.h"

namespace titan::gateway {

class Telemetry {
 public:
  static constexpr size_t kMaxCounterSamples = 200'000;
  static constexpr size_t kMaxEvents = 100'000;

  Telemetry();
  Status Open(const std::string& event_log_path);

  MetricRegistry& registry() { return registry_; }
  std::string RenderMetrics(std::string_view accept_header);

  // Series accessors (created on first use; labels as documented above).
  Series* QueueDepth(const std::string& class_name);
  Series* Inflight(const std::string& replica);
  Series* Ready(const std::string& replica);
  Series* InflightLimit(const std::string& replica);
  Series* Ejections(const std::string& replica);
  Series* UpstreamErrors(const std::string& replica);
  Series* Rejections(std::string_view reason);
  Series* Requests(int status);
  Series* Stalled(const std::string& replica);
  Series* Stalls(const std::string& replica);
  Series* Hedges(std::string_view reason);
  Series* HedgeWins(std::string_view reason);
  Series* HedgesRefused(std::string_view why);
  Series *batch_size, *queue_seconds, *ttft_seconds, *e2e_seconds, *slo_met, *retries,
      *completion_tokens, *stall_detection_seconds, *hedge_prompt_tokens, *prompt_tokens;

  // One event in titan's event-log format; `replica` names its Perfetto track ("" gateway).
  void Event(const std::string& type, const std::string& replica, nlohmann::json fields);
  // A counter sample for the Perfetto trace.
  void Counter(const std::string& name, int64_t wall_ns, double value);
  Status WritePerfetto(const std::string& path) const;
  uint64_t events_written() const { return events_written_; }

 private:
  struct CounterSample {
    int64_t wall_ns;
    double value;
    uint32_t name;
  };
  struct InstantEvent {
    int64_t wall_ns;
    std::string type, replica, args;
  };
  MetricRegistry registry_;
  supervisor::RunLog log_;
  std::vector<std::string> counter_names_;
  std::deque<CounterSample> counters_;
  std::deque<InstantEvent> events_;
  uint64_t events_written_ = 0;
};

}  // namespace titan::gateway
