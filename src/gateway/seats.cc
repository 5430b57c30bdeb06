// Seats: a request's claim on a replica, its place in its class's queue while none is free,
// dispatch and release (gateway_impl.h).
#include <algorithm>

#include "src/base/duration.h"
#include "src/gateway/gateway_impl.h"

namespace titan::gateway {

Replica* Gateway::Impl::TryPick(Ticket& t) {
  std::vector<Candidate> candidates;
  std::vector<Replica*> by_candidate;
  std::vector<bool> has_seat;
  const int64_t now = MonoNowNs();
  const int64_t budget = config.admission.token_budget_per_replica;
  const bool affinity = t.key && (config.routing.policy == RoutingPolicy::kPrefix ||
                                  config.routing.policy == RoutingPolicy::kSession);
  for (const auto& rp : replicas) {
    Replica& r = *rp;
    if (r.removed || r.pool != t.pool || !r.health.Routable() || t.exclude.count(r.index)) {
      continue;
    }
    const bool seat =
        r.in_flight < r.limit && (budget == 0 || r.in_flight == 0 || r.tokens + t.tokens <= budget);
    if (r.in_flight >= r.limit) r.saturated = true;
    if (!seat && !affinity) continue;
    candidates.push_back({r.index, r.in_flight, r.queued, r.health.Weight(now) * r.slow_weight});
    by_candidate.push_back(&r);
    has_seat.push_back(seat);
  }
  const int pick = router->Pick(candidates, t.key);
  if (pick < 0 || !has_seat[pick]) return nullptr;
  Replica* r = by_candidate[pick];
  ++r->in_flight;
  r->tokens += t.tokens;
  r->inflight_s->RecordGauge(WallNowNs(), r->in_flight);
  ++counters.in_flight;
  UpdateWork(*r);
  return r;
}

void Gateway::Impl::Release(Replica* r, int64_t tokens) {
  --r->in_flight;
  r->tokens -= tokens;
  --counters.in_flight;
  r->inflight_s->RecordGauge(WallNowNs(), r->in_flight);
  UpdateWork(*r);
  Dispatch();
}

void Gateway::Impl::RecordQueueDepths() {
  const int64_t wall = WallNowNs();
  for (auto& [pool, queue] : queues) {
    std::vector<Series*>& series = queue_depth_series[pool];
    if (series.size() != queue.class_count()) {
      series.clear();
      for (size_t c = 0; c < queue.class_count(); ++c) {
        series.push_back(telemetry.QueueDepth(pool == "default" ? queue.ClassName(c)
                                                                : pool + "/" + queue.ClassName(c)));
      }
    }
    for (size_t c = 0; c < series.size(); ++c) {
      series[c]->RecordGauge(wall, static_cast<double>(queue.depth(c)));
    }
  }
}

void Gateway::Impl::Dispatch() {
  bool changed = false;
  // The first waiter that can be seated goes, looking at most kLookahead deep: one that
  // waits for its own replica's seat (affinity) or for budget room does not hold up the rest.
  constexpr size_t kLookahead = 32;
  for (auto& [pool, queue] : queues) {
    for (bool seated = true; seated;) {
      seated = false;
      for (const Waiter* w : queue.Front(kLookahead)) {
        Ticket* t = static_cast<Ticket*>(w->owner);
        Replica* r = TryPick(*t);
        if (!r) continue;
        queue.Take(t->id);
        t->assigned = r;
        t->wake->Notify();
        changed = seated = true;
        break;  // Front's pointers are stale now
      }
    }
  }
  if (changed) RecordQueueDepths();
}

int Gateway::Impl::TotalSeats(const std::string& pool) const {
  int seats = 0;
  for (const auto& r : replicas) {
    if (!r->removed && r->pool == pool && r->health.Routable()) seats += r->limit;
  }
  return std::max(seats, 1);
}

awaitable<Replica*> Gateway::Impl::Acquire(Ticket& t, int64_t* retry_after_s) {
  if (t.client_gone) co_return nullptr;
  if (draining) {
    t.shed = Shed::kDraining;
    co_return nullptr;
  }
  if (!PoolHasUntried(t)) {
    t.shed = Shed::kNoReplica;
    *retry_after_s = 1;
    co_return nullptr;
  }
  FairQueue& queue = queues.at(t.pool);
  if (queue.size() == 0) {
    if (Replica* r = TryPick(t)) co_return r;
  }
  const int64_t now = MonoNowNs();
  const double ahead = static_cast<double>(queue.AheadOf(t.class_index) + 1);
  const int64_t expected_wait = static_cast<int64_t>(ahead * mean_service_ns / TotalSeats(t.pool));
  *retry_after_s = std::max<int64_t>(1, (expected_wait + kNsPerSecond - 1) / kNsPerSecond);
  if (t.deadline_ns > 0 && now + expected_wait > t.deadline_ns) {
    t.shed = Shed::kDeadline;
    co_return nullptr;
  }
  Waiter w;
  w.id = t.id;
  w.class_index = t.class_index;
  w.tenant = t.tenant;
  w.tokens = t.tokens;
  w.enqueued_ns = now;
  w.deadline_ns = t.deadline_ns;
  w.owner = &t;
  Signal wake(executor);
  t.wake = &wake;
  if (queue.Push(std::move(w)) != Shed::kNone) {
    t.wake = nullptr;
    t.shed = Shed::kQueueFull;
    co_return nullptr;
  }
  RecordQueueDepths();
  // Seats may be free while the queue is not empty (its front waits for one replica's seat,
  // or a retry may not go back to the replica it tried): seat whoever can go now. Without
  // this, a newcomer behind such a waiter waited for a Release that never came.
  Dispatch();
  int64_t until = now + config.admission.queue_timeout_ns;
  if (t.deadline_ns > 0) until = std::min(until, t.deadline_ns);
  co_await wake.WaitUntil(until);
  t.wake = nullptr;
  if (t.assigned) co_return t.assigned;  // Forward gives it up if the client left
  if (t.shed == Shed::kNone && !t.client_gone) t.shed = Shed::kQueueTimeout;
  queue.Remove(t.id);
  RecordQueueDepths();
  co_return nullptr;
}

void Gateway::Impl::WatchClient(http::Exchange& ex, Ticket& t) {
  if (ex.client_gone()) t.client_gone = true;
  ex.OnClientGone([&t] {
    t.client_gone = true;
    if (t.wake) t.wake->Notify();
  });
}

}  // namespace titan::gateway
