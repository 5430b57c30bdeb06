#include "src/gateway/replica_health.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "src/base/duration.h"

namespace titan::gateway {

std::string_view ReplicaStateName(ReplicaState state) {
  switch (state) {
    case ReplicaState::kStarting:
      return "starting";
    case ReplicaState::kWarming:
      return "warming";
    case ReplicaState::kReady:
      return "ready";
    case ReplicaState::kStalled:
      return "stalled";
    case ReplicaState::kEjected:
      return "ejected";
    case ReplicaState::kDown:
      return "down";
  }
  return "?";
}

double ReplicaHealth::Weight(int64_t now_ns) const {
  if (outlier_->slow_start_ns <= 0) return 1;
  const double f = static_cast<double>(now_ns - ready_since_ns_) / outlier_->slow_start_ns;
  return std::clamp(f, 0.1, 1.0);
}

std::optional<Transition> ReplicaHealth::MoveTo(ReplicaState to, std::string reason,
                                                int64_t ejection_ns) {
  if (to == state_) return std::nullopt;
  Transition t{state_, to, std::move(reason), ejection_ns};
  state_ = to;
  return t;
}

std::optional<Transition> ReplicaHealth::OnHealthCheck(bool ok, int64_t now_ns, bool may_eject) {
  if (state_ == ReplicaState::kDown) return std::nullopt;
  if (!ok) {
    ++failed_checks_;
    if (may_eject && (state_ == ReplicaState::kReady || state_ == ReplicaState::kStalled) &&
        failed_checks_ >= health_->failures_to_eject) {
      return Eject(fmt::format("{} failed health checks in a row", failed_checks_), now_ns);
    }
    return std::nullopt;
  }
  failed_checks_ = 0;
  if (state_ == ReplicaState::kStarting) return MoveTo(ReplicaState::kWarming, "healthy");
  if (state_ == ReplicaState::kEjected && now_ns >= until_ns_) {
    return MoveTo(ReplicaState::kWarming, "ejection over and healthy");
  }
  // A clean stretch as long as the longest ejection forgives past ejections.
  if (state_ == ReplicaState::kReady && ejections_ > 0 &&
      now_ns - ready_since_ns_ > outlier_->max_ejection_ns) {
    ejections_ = 0;
  }
  return std::nullopt;
}

std::optional<Transition> ReplicaHealth::OnWarmedUp(int64_t now_ns) {
  if (state_ != ReplicaState::kWarming) return std::nullopt;
  ready_since_ns_ = now_ns;
  failures_in_row_ = 0;
  slow_intervals = 0;
  ++epoch_;
  return MoveTo(ReplicaState::kReady, "warmed up");
}

std::optional<Transition> ReplicaHealth::OnRequestEnd(bool ok, int64_t now_ns) {
  if (ok) {
    failures_in_row_ = 0;
    return std::nullopt;
  }
  ++failures_in_row_;
  if ((state_ == ReplicaState::kReady || state_ == ReplicaState::kStalled) &&
      failures_in_row_ >= outlier_->consecutive_failures) {
    return Eject(fmt::format("{} failed requests in a row", failures_in_row_), now_ns);
  }
  return std::nullopt;
}

std::optional<Transition> ReplicaHealth::Eject(std::string reason, int64_t now_ns) {
  if (state_ != ReplicaState::kReady && state_ != ReplicaState::kWarming &&
      state_ != ReplicaState::kStalled) {
    return std::nullopt;
  }
  ++ejections_;
  const double factor = std::ldexp(1.0, std::min(ejections_ - 1, 30));
  const int64_t duration = static_cast<int64_t>(
      std::min<double>(outlier_->base_ejection_ns * factor, outlier_->max_ejection_ns));
  until_ns_ = now_ns + duration;
  failures_in_row_ = 0;
  slow_intervals = 0;
  return MoveTo(ReplicaState::kEjected, std::move(reason), duration);
}

std::optional<Transition> ReplicaHealth::OnStall(std::string reason) {
  if (state_ != ReplicaState::kReady) return std::nullopt;
  return MoveTo(ReplicaState::kStalled, std::move(reason));
}

std::optional<Transition> ReplicaHealth::OnProgress(std::string reason) {
  if (state_ != ReplicaState::kStalled) return std::nullopt;
  ++epoch_;
  slow_intervals = 0;
  return MoveTo(ReplicaState::kReady, std::move(reason));
}

std::optional<Transition> ReplicaHealth::OnProcessExit(std::string detail) {
  failed_checks_ = 0;
  failures_in_row_ = 0;
  return MoveTo(ReplicaState::kDown, "process exited: " + detail);
}

std::optional<Transition> ReplicaHealth::OnProcessStart() {
  return MoveTo(ReplicaState::kStarting, "process started");
}

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The replica's mean of one latency and its peers' median of the same; nullopt if either
// lacks samples.
std::optional<std::pair<double, double>> AgainstPeers(const std::vector<IntervalStats>& stats,
                                                      size_t i, const OutlierConfig& config,
                                                      double IntervalStats::*sum,
                                                      size_t IntervalStats::*count) {
  if (stats[i].*count < config.min_requests) return std::nullopt;
  std::vector<double> peers;
  for (size_t j = 0; j < stats.size(); ++j) {
    if (j != i && stats[j].*count >= config.min_requests) {
      peers.push_back(stats[j].*sum / stats[j].*count);
    }
  }
  if (peers.empty()) return std::nullopt;
  return std::make_pair(stats[i].*sum / stats[i].*count, Median(peers));
}

}  // namespace

std::vector<OutlierVerdict> EvaluateOutliers(const std::vector<IntervalStats>& stats,
                                             std::vector<ReplicaHealth*> healths,
                                             const OutlierConfig& config, size_t replicas_total,
                                             size_t already_out) {
  std::vector<OutlierVerdict> verdicts(stats.size());
  const size_t max_out = static_cast<size_t>(config.max_ejected_fraction * replicas_total);
  size_t out = already_out;
  for (size_t i = 0; i < stats.size(); ++i) {
    const IntervalStats& s = stats[i];
    std::string reason;
    if (s.requests >= config.min_requests &&
        s.failures >= config.error_rate * static_cast<double>(s.requests)) {
      reason = fmt::format("{} of {} requests failed in {}", s.failures, s.requests,
                           FormatDuration(config.interval_ns));
    }
    // Slow: over the ratio in TTFT (this interval's) or ITL (since it was last judged). Judged:
    // slow, or compared and fine in ITL (in TTFT where it has no streams at all). TTFT alone
    // does not clear a replica: it holds the replica's queue, which routing sets (one given
    // little work answers its first token fast however slow it streams).
    bool slow = false, ttft_compared = false, itl_compared = false;
    double slow_ratio = 0;
    std::string slow_reason;
    for (auto [name, sum, count, compared] :
         {std::tuple{"ttft", &IntervalStats::ttft_sum_ns, &IntervalStats::ttft_count,
                     &ttft_compared},
          std::tuple{"itl", &IntervalStats::itl_sum_ns, &IntervalStats::itl_count,
                     &itl_compared}}) {
      auto against = AgainstPeers(stats, i, config, sum, count);
      if (!against || against->second <= 0) continue;
      *compared = true;
      if (against->first > config.latency_ratio * against->second) {
        slow = true;
        slow_ratio = std::max(slow_ratio, against->first / against->second);
        slow_reason = fmt::format("{} {} is {:.1f}x the peers' median {}", name,
                                  FormatDurationShort(static_cast<int64_t>(against->first)),
                                  against->first / against->second,
                                  FormatDurationShort(static_cast<int64_t>(against->second)));
      }
    }
    verdicts[i].judged = slow || itl_compared || (s.itl_count == 0 && ttft_compared);
    if (verdicts[i].judged) healths[i]->slow_intervals = slow ? healths[i]->slow_intervals + 1 : 0;
    bool latency = false;
    if (reason.empty() && slow && healths[i]->slow_intervals >= config.consecutive_intervals) {
      reason = fmt::format("{} for {} intervals", slow_reason, healths[i]->slow_intervals);
      latency = true;
    }
    if (!reason.empty() && out < max_out) {
      verdicts[i].reason = std::move(reason);
      verdicts[i].slow = latency;
      verdicts[i].ratio = latency ? slow_ratio : 0;
      ++out;
    }
  }
  return verdicts;
}

void StartNextInterval(IntervalStats* stats, ReplicaHealth* health, const OutlierConfig& config,
                       bool judged) {
  if (!judged && stats->intervals < config.max_window_intervals) {
    *stats = {.intervals = stats->intervals + 1,
              .itl_sum_ns = stats->itl_sum_ns,
              .itl_count = stats->itl_count};
    return;
  }
  if (!judged) health->slow_intervals = 0;
  *stats = {};
}

}  // namespace titan::gateway
