// ReplicaHealth: whether one replica gets traffic, and why not. Free of I/O: the gateway feeds
// it health-check results, request outcomes and per-interval latency numbers; it answers
// Routable() and Weight() and returns the transitions to log.
//
// States:
//   starting  not yet answering its health check (a launched replica loading its model);
//   warming   healthy; the gateway sends it warm-up requests before any traffic;
//   ready     gets traffic; for outlier.slow_start after (re)admission its routing weight
//             ramps from 0.1 to 1, so a cold replica is not flooded at once;
//   stalled   busy and making no progress for longer than its own recent behaviour explains
//             (progress_watch.h): no new requests until its next byte of progress, which makes
//             it ready again at once (no back-off, no warm-up, no slow start: a stall is a
//             transient, not a fault);
//   ejected   out of rotation until `until_ns`, then back to warming once a health check
//             passes. Ejection lasts outlier.base_ejection * 2^(ejections-1), capped at
//             outlier.max_ejection; `ejections` goes back to 0 after a clean max_ejection.
//   down      its process exited (supervised replicas); back to starting when respawned.
// Causes of ejection: failed health checks in a row (health.failures_to_eject), failures in a
// row (circuit breaker, outlier.consecutive_failures), an interval error rate over
// outlier.error_rate, or TTFT / ITL over outlier.latency_ratio times the peers' median for
// outlier.consecutive_intervals intervals (EvaluateOutliers). Outlier rules never eject more
// than outlier.max_ejected_fraction of the replicas; health checks and exits always count. A
// stalled replica that also fails (its checks, its requests) is ejected like a ready one.
// The gateway ejects a replica that is only slow (a latency verdict) only when the others can
// carry the load without it (capacity.h).
//
// Each time the replica becomes ready its epoch grows: latency numbers of requests sent in an
// earlier epoch (before an ejection or a stall ended) say nothing of it now and are not counted.
//
// Thread safety: none; owned by the gateway's event loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/gateway/config.h"

namespace titan::gateway {

enum class ReplicaState { kStarting, kWarming, kReady, kStalled, kEjected, kDown };
std::string_view ReplicaStateName(ReplicaState state);

// A state change to report: {from, to, reason}.
struct Transition {
  ReplicaState from, to;
  std::string reason;       // "3 failed health checks", "itl 5.1x the peers' median", ...
  int64_t ejection_ns = 0;  // for ejections: how long
};

// What one replica did: in this outlier interval, its finished requests (the error rule's
// numbers) and their TTFT; since it was last judged, over the last `intervals` intervals, its
// streams' ITL (StartNextInterval carries ITL numbers too few to judge into the next interval).
struct IntervalStats {
  size_t requests = 0;  // finished (ok or not)
  size_t failures = 0;
  double ttft_sum_ns = 0;
  size_t ttft_count = 0;
  int intervals = 1;      // intervals the ITL numbers span
  double itl_sum_ns = 0;  // mean gap between a stream's chunks, summed over streams
  size_t itl_count = 0;
};

class ReplicaHealth {
 public:
  ReplicaHealth(const HealthConfig* health, const OutlierConfig* outlier, ReplicaState initial)
      : health_(health), outlier_(outlier), state_(initial) {}

  ReplicaState state() const { return state_; }
  bool Routable() const { return state_ == ReplicaState::kReady; }
  // Slow-start weight in (0, 1] at monotonic `now_ns`.
  double Weight(int64_t now_ns) const;
  int ejections() const { return ejections_; }
  int64_t ejected_until_ns() const { return until_ns_; }
  uint64_t epoch() const { return epoch_; }

  // A health check's result. With `may_eject` false, failures are counted but do not eject
  // (the gateway passes false for a timed-out check of the last ready replica of its pool:
  // a gateway whose own loop is overloaded times out its checks, and ejecting the only
  // replica would turn slowness into 503s for everyone).
  std::optional<Transition> OnHealthCheck(bool ok, int64_t now_ns, bool may_eject = true);
  // Warm-up done: warming -> ready.
  std::optional<Transition> OnWarmedUp(int64_t now_ns);
  // A request that reached (or tried to reach) this replica ended.
  std::optional<Transition> OnRequestEnd(bool ok, int64_t now_ns);
  // Outlier verdict (from EvaluateOutliers).
  std::optional<Transition> Eject(std::string reason, int64_t now_ns);
  // The stall watch found it busy and silent (ready -> stalled).
  std::optional<Transition> OnStall(std::string reason);
  // A byte of progress: stalled -> ready at once, keeping its slow-start weight.
  std::optional<Transition> OnProgress(std::string reason);
  std::optional<Transition> OnProcessExit(std::string detail);
  std::optional<Transition> OnProcessStart();

  // Outlier bookkeeping: intervals in a row over the latency ratio.
  int slow_intervals = 0;

 private:
  std::optional<Transition> MoveTo(ReplicaState to, std::string reason, int64_t ejection_ns = 0);

  const HealthConfig* health_;
  const OutlierConfig* outlier_;
  ReplicaState state_;
  int failed_checks_ = 0;
  int failures_in_row_ = 0;
  int ejections_ = 0;
  int64_t until_ns_ = 0;
  int64_t ready_since_ns_ = 0;
  uint64_t epoch_ = 0;
};

// One replica's verdict for one interval.
struct OutlierVerdict {
  std::string reason;  // why to eject it; "" to keep it
  bool slow = false;   // a latency verdict (not errors): the gateway weighs it against capacity
  double ratio = 0;    // with `slow`: its latency over the peers' median
  // Its latency was judged: over the ratio in TTFT or ITL, or compared with its peers' (at
  // least min_requests of its own and of theirs) and within it in ITL, or in TTFT where it has
  // no streams. Only a judged interval moves its slow_intervals.
  bool judged = false;
};

// One interval's verdicts: for each replica (same order as `stats`, whose entries are only the
// routable replicas' numbers), the verdict. Updates the slow_intervals of each judged replica
// (the others' count stands).
// `replicas_total` counts every replica (for the ejected fraction), `already_out` those not
// routable now.
std::vector<OutlierVerdict> EvaluateOutliers(const std::vector<IntervalStats>& stats,
                                             std::vector<ReplicaHealth*> healths,
                                             const OutlierConfig& config, size_t replicas_total,
                                             size_t already_out);

// After EvaluateOutliers, a routable replica's numbers for the next interval: requests and
// TTFT start afresh; ITL too once `judged` (its verdict's), else it carries over, up to
// max_window_intervals, after which it and the slow_intervals are dropped (numbers that old
// say nothing of the replica now).
void StartNextInterval(IntervalStats* stats, ReplicaHealth* health, const OutlierConfig& config,
                       bool judged);

}  // namespace titan::gateway
