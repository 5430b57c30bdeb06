// titan gateway's configuration: a YAML file (--config) and flags, the flags winning.
// docs/gateway.md lists every key with its default; LoadConfig rejects unknown keys and bad
// values with a message that names the file, the key and what is allowed, so a typo in a
// reloaded file (SIGHUP) is reported and the running configuration is kept.
//
// Durations use titan's one syntax (src/base/duration.h: "250ms", "2s", "1m"); sizes are
// plain integers (bytes, tokens).
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"

namespace titan::gateway {

enum class RoutingPolicy { kRoundRobin, kLeastOutstanding, kPowerOfTwo, kPrefix, kSession };
std::string_view RoutingPolicyName(RoutingPolicy policy);
Result<RoutingPolicy> ParseRoutingPolicy(std::string_view text);
// "ADDRESS:PORT" (port 0..65535; 0: any free port), for `listen:` and --listen. The error
// names the text and the expected form.
Status ParseListen(std::string_view text, std::string* address, int* port);

struct ReplicaConfig {
  std::string url;               // http://host:port
  std::string pool = "default";  // "long": set aside for prompts over limits.long_prompt_tokens
};

struct PriorityClass {
  std::string name;
  size_t max_queue = 1024;  // waiting requests of this class; more get 429
  // Default deadline of its requests (0: none, or ttft_slo when that is set): a request that
  // cannot get a seat by then gets 429 + Retry-After instead of a place in the queue.
  int64_t deadline_ns = 0;
  bool hedge = true;  // its requests may be hedged and rescued (hedging, stall)
};

struct TenantWeight {
  std::string tenant;
  double weight = 1;
};

struct AdmissionConfig {
  // Highest priority first. A request names its class in `priority_header`; an unknown or
  // missing one gets `default_class`.
  std::vector<PriorityClass> classes = {{"high", 1024, 0}, {"default", 1024, 0}, {"low", 1024, 0}};
  std::string default_class = "default";
  std::string priority_header = "x-titan-priority";
  // The tenant is this header's value, else the API key (Authorization: Bearer ...), else "".
  std::string tenant_header = "x-titan-tenant";
  std::vector<TenantWeight> tenant_weights;  // others weigh 1
  std::string deadline_header = "x-titan-deadline-ms";
  int max_inflight_per_replica = 8;  // requests sent to one replica at once (>= 1)
  // Adaptive: the per-replica limit moves within [min_inflight, max_inflight_per_replica],
  // shrinking while that replica's TTFT p90 over one interval is above target_ttft.
  bool adaptive = false;
  int min_inflight = 1;
  int64_t target_ttft_ns = 500'000'000;
  // Prompt + max_tokens tokens in flight per replica (0: no budget).
  int64_t token_budget_per_replica = 0;
  int64_t queue_timeout_ns = 30'000'000'000;  // longer in the queue: 429
};

struct LimitsConfig {
  size_t max_body_bytes = 8 << 20;
  int64_t max_prompt_tokens = 0;     // 0: no limit
  int64_t long_prompt_tokens = 0;    // > 0 and a "long" pool exists: longer prompts go there
  int64_t max_tokens = 0;            // cap on a request's max_tokens (0: none)
  int64_t default_max_tokens = 256;  // assumed for budgets when a request gives none
  int64_t max_n = 1;
  // Prompt tokens are estimated as bytes / chars_per_token (calibrated against the first
  // ready replica's /tokenize); near a limit (within 25%) the replica's /tokenize decides.
  double chars_per_token = 4;
  bool exact_near_limit = true;
};

struct RoutingConfig {
  RoutingPolicy policy = RoutingPolicy::kPowerOfTwo;
  size_t prefix_chars = 256;  // prefix affinity hashes this many leading prompt bytes
  double load_factor = 1.25;  // bounded load: a replica takes an affine request while its
                              // load <= load_factor * (mean load + 1)
  std::string session_header = "x-session-id";  // else the body's "user"
};

struct BatchingConfig {
  bool enabled = false;
  size_t max_batch_size = 8;
  int64_t max_queue_delay_ns = 2'000'000;
  std::vector<size_t> preferred_sizes;  // ascending; empty: flush whatever is queued
};

struct HealthConfig {
  std::string path = "/health";
  int64_t interval_ns = 1'000'000'000;
  int64_t timeout_ns = 2'000'000'000;
  int failures_to_eject = 2;  // consecutive failed checks
  int warmup_requests = 2;    // small completions sent before a replica gets traffic
  int64_t startup_timeout_ns = 600'000'000'000;  // a launched replica may take this to be healthy
};

struct OutlierConfig {
  int64_t interval_ns = 1'000'000'000;
  size_t min_requests = 3;   // in an interval, for the replica's numbers to count
  double latency_ratio = 3;  // TTFT or ITL mean over this many times the peers' median
  int consecutive_intervals = 2;
  // A replica that finished fewer than min_requests in an interval keeps its numbers for the
  // next, up to this many intervals: a replica so slow that it rarely finishes is still judged.
  int max_window_intervals = 10;
  double error_rate = 0.5;                   // failed fraction in an interval
  int consecutive_failures = 5;              // circuit breaker: failures in a row
  int64_t base_ejection_ns = 5'000'000'000;  // doubles with each ejection, up to max
  int64_t max_ejection_ns = 120'000'000'000;
  double max_ejected_fraction = 0.5;  // never eject more replicas than this by outlier rules
  int64_t slow_start_ns = 10'000'000'000;
  // A replica that is only slow is ejected only when the others carry the offered load at or
  // below this utilization of their measured rate (capacity.h); else it is weighted down.
  double capacity_utilization = 0.9;
};

// Stall detection from progress (progress_watch.h): a busy replica silent for longer than
// max(floor, k x the p99 of its recent gaps) stops getting requests until its next byte.
struct StallConfig {
  bool enabled = true;
  double k = 3;
  int64_t floor_ns = 100'000'000;
  int64_t initial_ns = 1'000'000'000;      // the threshold before a replica has 20 samples
  int64_t window_ns = 60'000'000'000;      // "recent": the percentiles' window
  int64_t check_interval_ns = 10'000'000;  // how often the gateway looks (also the hedge check)
};

// Hedged and rescued requests (docs/gateway.md): a streamed request without its first token
// after max(min_delay, delay_factor x the replicas' recent TTFT p95) is sent to another ready
// replica too; a request without its first token on a replica that stalls is sent elsewhere at
// once (rescue). The first to send a token wins; the other's connection is closed. Both draw on
// a budget of `budget` x the offered prompt tokens per priority class (hedge_budget.h).
struct HedgingConfig {
  bool enabled = true;
  bool rescue = true;
  double delay_factor = 2;
  int64_t min_delay_ns = 50'000'000;
  double budget = 0.05;
  int64_t budget_window_ns = 60'000'000'000;
};

struct LaunchConfig {
  std::string command;  // with {port}; empty: no supervised replicas
  int replicas = 1;
  int64_t memory_max_bytes = 0;
  std::string log_dir;
};

struct GatewayConfig {
  std::string listen_address = "127.0.0.1";
  int listen_port = 8000;
  std::vector<ReplicaConfig> replicas;
  LaunchConfig launch;
  AdmissionConfig admission;
  LimitsConfig limits;
  RoutingConfig routing;
  BatchingConfig batching;
  HealthConfig health;
  OutlierConfig outlier;
  StallConfig stall;
  HedgingConfig hedging;
  int retries = 1;  // on another replica, when a request failed before its first byte
  int64_t scrape_interval_ns = 250'000'000;  // replica /metrics
  int64_t upstream_timeout_ns = 600'000'000'000;
  // A replica silent this long in the middle of an answer (after its first body byte) has
  // failed it: the client gets the mid-stream error instead of waiting out upstream_timeout.
  int64_t upstream_idle_timeout_ns = 60'000'000'000;
  int64_t drain_timeout_ns = 30'000'000'000;
  // The TTFT objective: the SLO-attainment metric, and the default deadline of classes without
  // their own (queueing past it would miss it anyway). 0: neither.
  int64_t ttft_slo_ns = 0;
  std::string access_log;  // JSON lines, one per request ("-": stdout)
  std::string event_log;   // JSON lines (titan's event-log format)
  std::string perfetto;    // written at exit
};

// Parses YAML text (`source` names it in errors) on top of `base`.
Result<GatewayConfig> ParseConfig(std::string_view yaml_text, std::string_view source,
                                  GatewayConfig base = {});
Result<GatewayConfig> LoadConfig(const std::string& path, GatewayConfig base = {});
// Cross-field checks (classes exist, replicas or launch given, ranges); errors name the key.
Status ValidateConfig(const GatewayConfig& config);

}  // namespace titan::gateway
