#include "src/gateway/gateway.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <map>
#include <set>

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/json_depth.h"
#include "src/base/log.h"
#include "src/base/text.h"
#include "src/gateway/admission.h"
#include "src/gateway/batch_codec.h"
#include "src/gateway/openai_request.h"
#include "src/gateway/replica_health.h"
#include "src/gateway/replica_launcher.h"
#include "src/gateway/router.h"
#include "src/gateway/stream_meter.h"
#include "src/gateway/telemetry.h"
#include "src/http/asio_names.h"
#include "src/http/client.h"
#include "src/http/server.h"
#include "src/metrics/exposition.h"
#include "src/metrics/text_parse.h"

namespace titan::gateway {

namespace {

using boost::asio::awaitable;
using boost::asio::ip::tcp;
namespace asio = boost::asio;
using http::kNoThrow;

constexpr size_t kMaxIdlePerReplica = 256;
constexpr size_t kMaxBufferedAnswer = 64 << 20;  // a whole (non-streamed) answer
constexpr size_t kMaxPendingRelay = 8 << 20;     // bytes a slow client may fall behind
constexpr int64_t kConnectTimeoutNs = 2 * kNsPerSecond;
const http::Headers kNoHeaders;
const http::Headers kRetryAfterOne = {{"Retry-After", "1"}};
const std::string kNoId;

std::chrono::steady_clock::time_point SteadyAt(int64_t mono_ns) {
  // MonoNowNs is CLOCK_MONOTONIC, which is what steady_clock reads on Linux.
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(mono_ns));
}

// A one-shot wake-up between coroutines of one loop: Notify() before or during Wait() both
// end the wait.
class Signal {
 public:
  explicit Signal(asio::any_io_executor executor)
      : timer_(executor, asio::steady_timer::time_point::max()) {}
  void Notify() {
    notified_ = true;
    timer_.cancel();
  }
  awaitable<void> Wait() {
    if (!notified_) co_await timer_.async_wait(kNoThrow);
    notified_ = false;
  }
  // Waits until notified or `deadline_mono_ns`; true when notified.
  awaitable<bool> WaitUntil(int64_t deadline_mono_ns) {
    if (!notified_) {
      timer_.expires_at(SteadyAt(deadline_mono_ns));
      co_await timer_.async_wait(kNoThrow);
      timer_.expires_at(asio::steady_timer::time_point::max());
    }
    const bool was = notified_;
    notified_ = false;
    co_return was;
  }

 private:
  asio::steady_timer timer_;
  bool notified_ = false;
};

struct Replica {
  Replica(const HealthConfig* h, const OutlierConfig* o, ReplicaState initial)
      : health(h, o, initial) {}
  int index = 0;
  std::string name;  // the URL as given
  http::Url url;
  tcp::endpoint endpoint;
  std::string host_header;
  std::string pool = "default";
  int launched = -1;  // ReplicaLauncher index, -1 for a static replica
  bool removed = false;
  ReplicaHealth health;
  int in_flight = 0;
  int64_t tokens = 0;
  int limit = 8;
  double queued = 0;
  bool checking = false, scraping = false, warming = false;
  std::vector<std::unique_ptr<http::ClientConnection>> idle;
  IntervalStats interval;
  std::vector<int64_t> interval_ttfts;
  bool saturated = false;  // reached its limit during this interval
  Series *inflight_s = nullptr, *ready_s = nullptr, *limit_s = nullptr, *ejections_s = nullptr,
         *errors_s = nullptr;
};

// One request's claim on a seat.
struct Ticket {
  uint64_t id = 0;
  size_t class_index = 0;
  std::string tenant;
  std::string pool = "default";
  int64_t tokens = 0;
  int64_t deadline_ns = 0;
  std::optional<uint64_t> key;
  std::set<int> exclude;  // replicas tried already
  Signal* wake = nullptr;
  Replica* assigned = nullptr;
  Shed shed = Shed::kNone;
  bool client_gone = false;  // the client left while it waited: no answer, no seat
};

// Server-sent events end with a blank line; bytes relayed so far that do not (a chunk ended
// mid-event) need one before the gateway appends an event of its own, or the two would merge.
bool EndsAnEvent(std::string_view relayed) {
  return relayed.ends_with("\n\n") || relayed.ends_with("\r\n\r\n");
}

// What the upstream said, shared between the sending coroutine and the relaying one.
struct UpstreamCall : http::ResponseObserver {
  explicit UpstreamCall(asio::any_io_executor executor, bool stream)
      : wake(executor), meter(stream), stream(stream) {}
  Signal wake;
  StreamMeter meter;
  bool stream;
  std::unique_ptr<http::ClientConnection> connection;
  http::OutgoingRequest request;
  int status = 0;
  http::Headers headers;
  bool head = false;
  int64_t head_ns = 0;
  std::string pending;
  bool discard = false;      // a retryable failure: do not relay
  bool client_gone = false;  // stop relaying, close upstream
  bool drain_cut = false;    // the drain timeout ended it: close upstream, answer 503
  // The client the stream is relayed to, once its head went there (else null).
  http::Exchange* relaying_to = nullptr;
  // Over the bound: with relaying_to, the client fell kMaxPendingRelay behind its own stream
  // (its doing, not the replica's: client_behind, and the client is cut off at once); else
  // the answer itself is too large.
  bool overflow = false;
  bool client_behind = false;
  bool done = false;
  // The bytes relayed to the client end with a whole event (see EndsAnEvent).
  bool at_event_end = true;
  http::ClientResult result;

  void OnHead(int s, const http::Headers& h, int64_t now_ns) override {
    status = s;
    headers = h;
    head = true;
    head_ns = now_ns;
  }
  bool OnBody(std::string_view data, int64_t now_ns) override {
    if (client_gone) return false;
    meter.OnBody(data, now_ns);
    if (discard) return true;
    const size_t limit = stream ? kMaxPendingRelay : kMaxBufferedAnswer;
    if (pending.size() + data.size() > limit) {
      if (relaying_to == nullptr) {
        overflow = true;
      } else {
        client_behind = true;
        relaying_to->Abort();  // its write in progress, if any, fails now
      }
      return false;
    }
    pending.append(data);
    return true;
  }
  // The reader has drained what arrived. A stream whose head went to its client gets those
  // bytes sent from here when its socket takes them at once (the common case: one send per
  // read, as nginx does, and no wake-up of the relay); else the relay wakes and writes them.
  void OnWaiting() override {
    if (relaying_to == nullptr || client_gone || !relaying_to->streaming()) {
      wake.Notify();
      return;
    }
    if (pending.empty()) return;
    switch (relaying_to->TryWrite(pending)) {
      case http::Exchange::TryWriteResult::kSent:
        at_event_end = EndsAnEvent(pending);
        pending.clear();
        return;
      case http::Exchange::TryWriteResult::kQueued:  // the relay sends the rest
        at_event_end = EndsAnEvent(pending);
        pending.clear();
        break;
      case http::Exchange::TryWriteResult::kBusy:  // the relay writes `pending`
        break;
      case http::Exchange::TryWriteResult::kGone:
        client_gone = true;
        connection->Close();
        break;
    }
    wake.Notify();
  }
};

awaitable<void> SendUpstream(std::shared_ptr<UpstreamCall> x, int64_t deadline_ns,
                             int64_t idle_timeout_ns) {
  http::ClientResult r = co_await x->connection->Send(x->request, *x, deadline_ns, idle_timeout_ns);
  x->result = std::move(r);
  x->done = true;
  x->wake.Notify();
}

bool RetryableStatus(int status) { return status >= 500 || status == 429; }

// Client connections the gateway accepts: each may hold an upstream connection too, and the
// health checks, scrapes and logs need descriptors of their own. Past this, clients get 503 at
// once, instead of the gateway running out of descriptors and failing its own health checks
// (which ejected healthy replicas).
size_t ClientConnectionCap(size_t configured) {
  constexpr size_t kReserved = 64;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return configured;
  const size_t descriptors = static_cast<size_t>(limit.rlim_cur);
  return std::min(configured, descriptors > 2 * kReserved ? (descriptors - kReserved) / 2 : 16);
}

// The upstream answer is complete and nothing will follow it on the client's stream (no
// "upstream failed" event): the relay may end the stream with its last bytes.
bool EndsCleanly(const UpstreamCall& x) {
  return x.done && x.result.ok() && !x.overflow && !x.client_behind && !RetryableStatus(x.status);
}

std::string BearerKey(std::string_view authorization) {
  if (authorization.size() > 7 && http::EqualsIgnoreCase(authorization.substr(0, 7), "bearer ")) {
    return std::string(authorization.substr(7));
  }
  return std::string(authorization);
}

}  // namespace

struct Gateway::Impl {
  GatewayConfig config;
  HealthConfig health_config;  // stable addresses for ReplicaHealth
  OutlierConfig outlier_config;
  std::unique_ptr<http::Server> server;
  asio::any_io_executor executor;
  std::vector<std::unique_ptr<Replica>> replicas;
  std::map<std::string, FairQueue> queues;                         // by pool
  std::map<std::string, std::vector<Series*>> queue_depth_series;  // by pool, by class
  std::unique_ptr<Router> router;
  Telemetry telemetry;
  std::unique_ptr<ReplicaLauncher> launcher;
  FILE* access_log = nullptr;
  bool draining = false, stopping = false;
  // Upstream calls in progress (Forward's), which the drain timeout cuts short.
  std::set<UpstreamCall*> calls;
  // Handlers running: the drain waits for them, so that each answer is written before the
  // server stops.
  int handlers = 0;
  uint64_t next_id = 1;
  double mean_service_ns = 1e9;  // EWMA of seat time, for expected waits
  double chars_per_token = 0;    // calibrated; 0: config's
  GatewayCounters counters;

  // Batching: pending members by batch key.
  struct Member {
    std::string body;
    size_t prompt_bytes = 0;
    Signal* wake = nullptr;
    int status = 0;
    std::string answer;
    uint64_t id = 0;
  };
  struct Batch {
    Endpoint endpoint;
    std::string target;
    std::vector<Member*> members;
    uint64_t generation = 0;
  };
  std::map<std::string, Batch> batches;
  uint64_t batch_generation = 0;

  ~Impl() {
    if (access_log && access_log != stdout) std::fclose(access_log);
  }

  // ---- replicas ----
  Status AddReplica(const ReplicaConfig& rc, int launched) {
    TITAN_ASSIGN_OR_RETURN(http::Url url, http::ParseUrl(rc.url));
    TITAN_ASSIGN_OR_RETURN(tcp::endpoint endpoint, http::Resolve(url));
    auto r = std::make_unique<Replica>(&health_config, &outlier_config, ReplicaState::kStarting);
    r->index = static_cast<int>(replicas.size());
    r->name = rc.url;
    r->url = url;
    r->endpoint = endpoint;
    r->host_header = fmt::format("{}:{}", url.host, url.port);
    r->pool = rc.pool;
    r->launched = launched;
    r->limit = config.admission.max_inflight_per_replica;
    r->inflight_s = telemetry.Inflight(r->name);
    r->ready_s = telemetry.Ready(r->name);
    r->limit_s = telemetry.InflightLimit(r->name);
    r->ejections_s = telemetry.Ejections(r->name);
    r->errors_s = telemetry.UpstreamErrors(r->name);
    if (!queues.count(rc.pool)) queues.emplace(rc.pool, FairQueue(config.admission));
    replicas.push_back(std::move(r));
    return OkStatus();
  }

  void Record(const std::optional<Transition>& t, Replica& r) {
    if (!t) return;
    nlohmann::json fields = {{"from", ReplicaStateName(t->from)},
                             {"to", ReplicaStateName(t->to)},
                             {"reason", t->reason}};
    std::string type = "replica_state";
    if (t->to == ReplicaState::kEjected) {
      type = "eject";
      fields["ejection_s"] = NsToSeconds(t->ejection_ns);
      fields["ejections"] = r.health.ejections();
      r.ejections_s->AddCounter(WallNowNs(), 1);
      ++counters.ejections;
      Log(LogLevel::kWarning, "gateway", "ejected {} for {}: {}", r.name,
          FormatDuration(t->ejection_ns), t->reason);
    } else if (t->to == ReplicaState::kReady) {
      type = r.health.ejections() > 0 ? "readmit" : "ready";
      Log(LogLevel::kInfo, "gateway", "{} {}", r.name, type == "readmit" ? "readmitted" : "ready");
    } else if (t->to == ReplicaState::kDown) {
      type = "replica_exit";
    }
    telemetry.Event(type, r.name, std::move(fields));
    r.ready_s->RecordGauge(WallNowNs(), r.health.Routable() ? 1 : 0);
    if (!r.health.Routable()) r.idle.clear();
    if (t->to == ReplicaState::kWarming) StartWarmup(r);
    if (t->to == ReplicaState::kReady) {
      r.limit = config.admission.max_inflight_per_replica;
      Dispatch();
    }
    if (!r.health.Routable()) FailQueuedWithoutReplicas();
  }

  // A ready replica of `t`'s pool that `t` has not tried yet (a retry goes elsewhere or fails).
  bool PoolHasUntried(const Ticket& t) const {
    for (const auto& r : replicas) {
      if (!r->removed && r->pool == t.pool && r->health.Routable() && !t.exclude.count(r->index)) {
        return true;
      }
    }
    return false;
  }
  bool PoolMayRecover(const std::string& pool) const {
    for (const auto& r : replicas) {
      if (!r->removed && r->pool == pool) return true;
    }
    return false;
  }
  // Waiters of a pool with no ready replica keep waiting while one may come back (their own
  // timeout ends the wait); a pool with no replica at all sheds them now.
  void FailQueuedWithoutReplicas() {
    for (auto& [pool, queue] : queues) {
      if (PoolMayRecover(pool)) continue;
      while (const Waiter* w = queue.Peek()) {
        Ticket* t = static_cast<Ticket*>(w->owner);
        queue.Pop();
        t->shed = Shed::kNoReplica;
        t->wake->Notify();
      }
    }
  }

  // ---- admission ----
  // Seats `t` on a replica, or returns nullptr when none may take it now. Affinity routing
  // (prefix, session with a key) chooses among every routable replica, full ones included,
  // and waits for its choice's seat: spilling to whichever replica has a seat would scatter a
  // prefix whenever the replicas are busy. The router's load bound still moves a key off a
  // replica that is loaded well above the others.
  Replica* TryPick(Ticket& t) {
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
      const bool seat = r.in_flight < r.limit &&
                        (budget == 0 || r.in_flight == 0 || r.tokens + t.tokens <= budget);
      if (r.in_flight >= r.limit) r.saturated = true;
      if (!seat && !affinity) continue;
      candidates.push_back({r.index, r.in_flight, r.queued, r.health.Weight(now)});
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
    return r;
  }

  void Release(Replica* r, int64_t tokens) {
    --r->in_flight;
    r->tokens -= tokens;
    --counters.in_flight;
    r->inflight_s->RecordGauge(WallNowNs(), r->in_flight);
    Dispatch();
  }

  // Runs on every dispatch: the series are looked up once per pool and class set.
  void RecordQueueDepths() {
    const int64_t wall = WallNowNs();
    for (auto& [pool, queue] : queues) {
      std::vector<Series*>& series = queue_depth_series[pool];
      if (series.size() != queue.class_count()) {
        series.clear();
        for (size_t c = 0; c < queue.class_count(); ++c) {
          series.push_back(telemetry.QueueDepth(
              pool == "default" ? queue.ClassName(c) : pool + "/" + queue.ClassName(c)));
        }
      }
      for (size_t c = 0; c < series.size(); ++c) {
        series[c]->RecordGauge(wall, static_cast<double>(queue.depth(c)));
      }
    }
  }

  void Dispatch() {
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

  int TotalSeats(const std::string& pool) const {
    int seats = 0;
    for (const auto& r : replicas) {
      if (!r->removed && r->pool == pool && r->health.Routable()) seats += r->limit;
    }
    return std::max(seats, 1);
  }

  // A seat for `t`, waiting in its queue if needed. nullptr with t.shed set when refused, or
  // with t.client_gone when the client left (WatchClient wakes the wait).
  awaitable<Replica*> Acquire(Ticket& t, int64_t* retry_after_s) {
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
    const int64_t expected_wait =
        static_cast<int64_t>(ahead * mean_service_ns / TotalSeats(t.pool));
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

  // A client that leaves while `t` waits for a seat ends the wait (Acquire then returns null
  // with t.client_gone): a fire-and-forget client must not keep a queue place.
  static void WatchClient(http::Exchange& ex, Ticket& t) {
    if (ex.client_gone()) t.client_gone = true;
    ex.OnClientGone([&t] {
      t.client_gone = true;
      if (t.wake) t.wake->Notify();
    });
  }

  // ---- upstream ----
  std::unique_ptr<http::ClientConnection> TakeIdle(Replica& r) {
    while (!r.idle.empty()) {
      auto c = std::move(r.idle.back());
      r.idle.pop_back();
      if (c->is_open()) return c;
    }
    return nullptr;
  }

  struct Answer {
    int status = 0;
    http::Headers headers;
    std::string body;
    bool upstream_failed = false;  // the replica failed (not the client)
    bool cut_off = false;          // the answer's transport failed after its head (truncated,
                                   // malformed, over the relay bound): never relayed as is
    // A whole answer to pass on: a head came and its body arrived complete.
    bool answered() const { return status != 0 && !cut_off; }
    bool retry = false;  // failed before its first byte: may go elsewhere
    bool client_gone = false;
    bool client_behind = false;  // cut off: the client read its stream too slowly (not a
                                 // failure of the replica, nor a client that left)
    bool drain_cut = false;      // the gateway's drain timeout ended it (not the replica)
    int64_t sent_ns = 0, first_ns = 0;
    std::string error;
  };

  // Sends `request` to `r` and, when `client` is set, relays the answer to it as it arrives
  // (stream) or whole; with `client` null (batches) the answer is only returned.
  awaitable<Answer> Forward(Replica& r, const http::OutgoingRequest& request, bool stream,
                            bool can_retry, http::Exchange* client, const std::string& id) {
    Answer answer;
    auto x = std::make_shared<UpstreamCall>(executor, stream);
    if (client) {
      // A client that leaves before its answer ends closes the upstream connection (the
      // replica cancels the work), streamed or not, before or after the first byte.
      if (client->client_gone()) {
        ++counters.client_gone;
        answer.client_gone = true;
        co_return answer;
      }
      client->OnClientGone([x] {
        x->client_gone = true;
        if (x->connection) x->connection->Close();
        x->wake.Notify();
      });
    }
    calls.insert(x.get());
    x->request = request;
    x->request.host = r.host_header;
    if (!x->request.target.starts_with(r.url.path))
      x->request.target = r.url.path + x->request.target;
    bool fresh = false;
    for (int attempt = 0; attempt < 2; ++attempt) {
      x->done = false;
      x->result = {};
      x->connection = attempt == 0 ? TakeIdle(r) : nullptr;
      fresh = !x->connection;
      if (fresh) {
        x->connection = std::make_unique<http::ClientConnection>(executor);
        http::ClientResult c = co_await x->connection->Connect(r.endpoint, kConnectTimeoutNs);
        if (!c.ok()) {
          x->result = c;  // accounted below as a failure before the first byte
          x->done = true;
          break;
        }
      }
      answer.sent_ns = MonoNowNs();
      asio::co_spawn(executor,
                     SendUpstream(x, answer.sent_ns + config.upstream_timeout_ns,
                                  config.upstream_idle_timeout_ns),
                     asio::detached);
      // Relay while the upstream answer arrives.
      bool head_decided = false, forwarding = false;
      for (;;) {
        if (x->head && !head_decided) {
          head_decided = true;
          if (can_retry && RetryableStatus(x->status)) {
            x->discard = true;
            x->pending.clear();
          } else if (client && stream) {
            forwarding = true;
            x->relaying_to = client;
            std::string_view type = http::FindHeader(x->headers, "Content-Type");
            http::Headers extra = {{"X-Request-Id", id}, {"X-Titan-Replica", r.name}};
            const std::string content_type(type.empty() ? "text/event-stream" : type);
            // The head leaves with whatever body arrived beside it (one write, not two).
            const std::string first = std::move(x->pending);
            x->pending.clear();
            if (!first.empty()) x->at_event_end = EndsAnEvent(first);
            if (!co_await client->BeginStream(x->status, content_type, extra, first,
                                              EndsCleanly(*x))) {
              x->client_gone = true;
              x->connection->Close();
            }
            continue;
          }
        }
        if (forwarding && !x->client_gone && (!x->pending.empty() || client->unsent())) {
          std::string chunk = std::move(x->pending);
          x->pending.clear();
          if (!chunk.empty()) x->at_event_end = EndsAnEvent(chunk);
          // The answer's last bytes and the stream's end leave in one write.
          if (!co_await client->Write(chunk, EndsCleanly(*x))) {
            x->client_gone = true;
            x->connection->Close();
          }
          continue;
        }
        if (x->done) break;
        co_await x->wake.Wait();
      }
      // A kept-alive connection the replica had closed fails before any byte: once more on a
      // fresh one, which is not a failure of the replica.
      if (!fresh && !x->head && !x->client_gone &&
          (x->result.error == http::ClientError::kClosed ||
           x->result.error == http::ClientError::kConnect)) {
        continue;
      }
      break;
    }
    answer.client_gone = x->client_gone;
    answer.status = x->status;
    answer.headers = std::move(x->headers);
    answer.first_ns = x->meter.first_event_ns() ? x->meter.first_event_ns() : x->head_ns;
    const bool transport_ok = x->result.ok() && !x->overflow;
    if (!stream && transport_ok) {
      x->meter.OnWholeBody(x->pending, MonoNowNs());
      answer.first_ns = x->meter.first_event_ns();
    }
    if (x->client_behind) {  // cut off; the replica did its part
      ++counters.client_behind;
      answer.client_behind = true;
      Log(LogLevel::kInfo, "gateway",
          "request {}: the client fell more than {} behind its stream from {}; cut off", id,
          FormatBytes(kMaxPendingRelay), r.name);
    } else if (x->client_gone) {
      ++counters.client_gone;
    } else if (x->drain_cut) {
      answer.drain_cut = true;
      answer.error =
          "the gateway is shutting down and its drain timeout ended before the "
          "replica's answer did; retry";
    } else if (!transport_ok) {
      answer.upstream_failed = true;
      answer.cut_off = x->head;
      answer.error = x->overflow ? fmt::format(
                                       "{} answered more than the gateway's {} bound on "
                                       "a whole answer",
                                       r.name, FormatBytes(kMaxBufferedAnswer))
                                 : fmt::format("{}: {}", r.name, x->result.message);
      answer.retry = !x->head && can_retry;
    } else if (RetryableStatus(x->status)) {
      answer.upstream_failed = x->status >= 500;
      answer.retry = can_retry;
      answer.error = fmt::format("{} answered {}", r.name, x->status);
    }
    // The stream broke after bytes went to the client: end it with an error event.
    if (!answer.client_gone && (answer.upstream_failed || answer.drain_cut) && !answer.retry &&
        client && client->streaming()) {
      const std::string error =
          answer.drain_cut
              ? http::JsonError(answer.error, "service_unavailable", 503)
              : http::JsonError(fmt::format("upstream failed mid-stream: {}", answer.error),
                                "upstream_error", 502);
      std::string event = fmt::format("{}data: {}\n\n", x->at_event_end ? "" : "\n\n", error);
      const bool written = co_await client->Write(event);
      (void)written;
    }
    if (!answer.retry) answer.body = std::move(x->pending);
    // Account the request on the replica.
    if (!answer.client_gone && !answer.drain_cut) {
      // An answer over the gateway's bound is refused to its client (502) but is no failure of
      // the replica (a large embeddings batch): its health is not touched.
      const bool ok = !answer.upstream_failed || x->overflow;
      IntervalStats& s = r.interval;
      ++s.requests;
      if (!ok) {
        ++s.failures;
        r.errors_s->AddCounter(WallNowNs(), 1);
      } else if (answer.first_ns > 0) {
        const int64_t ttft = answer.first_ns - answer.sent_ns;
        s.ttft_sum_ns += ttft;
        ++s.ttft_count;
        r.interval_ttfts.push_back(ttft);
        if (x->meter.events() > 1) {
          s.itl_sum_ns += x->meter.mean_itl_ns();
          ++s.itl_count;
        }
      }
      Record(r.health.OnRequestEnd(ok, MonoNowNs()), r);
      if (ok) telemetry.completion_tokens->AddCounter(WallNowNs(), x->meter.completion_tokens());
    }
    if (x->result.ok() && x->connection->is_open() && !x->client_gone &&
        r.idle.size() < kMaxIdlePerReplica && r.health.Routable() && !stopping) {
      r.idle.push_back(std::move(x->connection));
    }
    if (client) client->OnClientGone(nullptr);
    calls.erase(x.get());
    co_return answer;
  }

  // ---- requests ----
  struct Context {
    uint64_t id = 0;
    std::string request_id;
    int64_t arrival_ns = 0;
    Endpoint endpoint = Endpoint::kOther;
    RequestInfo info;
    Ticket ticket;
    int status = 0;
    std::string reason;  // shed or error reason for the access log
    std::string replica;
    int retries = 0;
    int64_t queue_ns = 0, ttft_ns = -1;
    size_t batch = 0;
  };

  // Coroutine parameters are references to the caller's named locals: GCC 12 mishandles
  // temporaries inside co_await expressions.
  awaitable<void> RespondError(http::Exchange& ex, Context& c, int status, std::string_view type,
                               const std::string& message, const http::Headers& headers) {
    c.status = status;
    http::Headers extra = headers;
    extra.push_back({"X-Request-Id", c.request_id});
    std::string body = http::JsonError(message, type, status);
    co_await ex.Respond(status, "application/json", std::move(body), extra);
  }

  // The client left while queued: its answer is nobody's (access log: 499).
  void LeftWhileQueued(Context& c) {
    ++counters.client_gone;
    c.status = 499;
    c.reason = "client_gone";
  }

  awaitable<void> Reject(http::Exchange& ex, Context& c, Shed shed, int64_t retry_after_s) {
    c.reason = std::string(ShedName(shed));
    ++counters.shed;
    telemetry.Rejections(c.reason)->AddCounter(WallNowNs(), 1);
    telemetry.Event("shed", "",
                    {{"request", c.request_id},
                     {"reason", c.reason},
                     {"class", queues.at(c.ticket.pool).ClassName(c.ticket.class_index)},
                     {"tenant", c.ticket.tenant}});
    const bool unavailable = shed == Shed::kNoReplica || shed == Shed::kDraining;
    const int status = unavailable ? 503 : 429;
    std::string message;
    switch (shed) {
      case Shed::kQueueFull:
        message = "the gateway's queue for this class is full; retry after the Retry-After seconds";
        break;
      case Shed::kDeadline:
        message =
            "the expected wait is past the request's deadline; retry later or give a later "
            "deadline";
        break;
      case Shed::kQueueTimeout:
        message = "no replica seat became free before the request's deadline or queue timeout";
        break;
      case Shed::kNoReplica:
        message = "no replica is ready to serve this request";
        break;
      default:
        message = "the gateway is shutting down";
    }
    http::Headers extra;
    if (retry_after_s > 0) extra.push_back({"Retry-After", std::to_string(retry_after_s)});
    co_await RespondError(ex, c, status, unavailable ? "service_unavailable" : "rate_limited",
                          message, extra);
  }

  // 400 for a limit, counted as "limit".
  awaitable<void> RejectLimit(http::Exchange& ex, Context& c, const std::string& message) {
    c.reason = "limit";
    ++counters.invalid;
    telemetry.Rejections("limit")->AddCounter(WallNowNs(), 1);
    co_await RespondError(ex, c, 400, "invalid_request_error", message, kNoHeaders);
  }

  // The replica's token count of `text` through its /tokenize (llama.cpp's {"content"} and
  // vLLM's {"prompt"} forms both answered), or -1 when it has none or fails.
  awaitable<int64_t> Tokenize(Replica& r, const std::string& text) {
    http::OutgoingRequest req;
    req.target = r.url.path + "/tokenize";
    req.host = r.host_header;
    req.headers = {{"Content-Type", "application/json"}};
    req.body = nlohmann::json({{"content", text}, {"prompt", text}}).dump();
    Result<http::FetchedResponse> got =
        co_await http::FetchAsync(r.endpoint, req, config.health.timeout_ns);
    if (!got.ok() || got->status != 200 || !CheckJsonDepth(got->body, "/tokenize").ok()) {
      co_return -1;
    }
    auto doc = nlohmann::json::parse(got->body, nullptr, false);
    if (doc.is_object() && doc.contains("tokens") && doc["tokens"].is_array()) {
      co_return static_cast<int64_t>(doc["tokens"].size());
    }
    if (doc.is_object() && doc.contains("count") && doc["count"].is_number_integer()) {
      co_return doc["count"].get<int64_t>();
    }
    co_return -1;
  }

  // The exact prompt length from a ready replica of `pool`, or -1.
  awaitable<int64_t> ExactTokens(const std::string& pool, const std::string& text) {
    for (const auto& r : replicas) {
      if (r->removed || r->pool != pool || !r->health.Routable()) continue;
      const int64_t count = co_await Tokenize(*r, text);
      co_return count;
    }
    co_return -1;
  }

  double CharsPerToken() const {
    return chars_per_token > 0 ? chars_per_token : config.limits.chars_per_token;
  }

  awaitable<void> HandleApi(http::Exchange& ex, Endpoint endpoint) {
    Context c;
    c.id = next_id++;
    c.arrival_ns = ex.received_ns();
    c.endpoint = endpoint;
    const http::Request& req = ex.request();
    c.request_id = std::string(http::FindHeader(req.headers, "X-Request-Id"));
    if (c.request_id.empty() || c.request_id.size() > 128) {
      c.request_id = fmt::format("gw-{:x}-{}", WallNowNs() / 1000, c.id);
    }
    ++counters.requests;
    co_await ServeApi(ex, c);
    if (c.status == 0) c.status = 200;
    telemetry.Requests(c.status)->AddCounter(WallNowNs(), 1);
    telemetry.e2e_seconds->RecordGauge(WallNowNs(), NsToSeconds(MonoNowNs() - c.arrival_ns));
    WriteAccessLog(c);
  }

  awaitable<void> ServeApi(http::Exchange& ex, Context& c) {
    const http::Request& req = ex.request();
    std::string param;
    RequestLimits limits;
    Result<RequestInfo> info = InspectRequest(c.endpoint, req.body, limits, &param);
    if (!info.ok()) {
      c.reason = "invalid";
      ++counters.invalid;
      telemetry.Rejections("invalid")->AddCounter(WallNowNs(), 1);
      const std::string why(info.status().message());
      co_await RespondError(ex, c, 400, "invalid_request_error", why, kNoHeaders);
      co_return;
    }
    c.info = std::move(*info);
    const LimitsConfig& L = config.limits;
    if (c.info.n > L.max_n) {
      const std::string why =
          fmt::format("n={} is over the gateway's limit of {} (limits.max_n)", c.info.n, L.max_n);
      co_await RejectLimit(ex, c, why);
      co_return;
    }
    if (L.max_tokens > 0 && c.info.max_tokens > L.max_tokens) {
      const std::string why = fmt::format(
          "max_tokens={} is over the gateway's limit of {} "
          "(limits.max_tokens); ask for fewer",
          c.info.max_tokens, L.max_tokens);
      co_await RejectLimit(ex, c, why);
      co_return;
    }
    // Prompt tokens: estimated, exact near a limit.
    c.ticket.pool = "default";
    int64_t prompt_tokens =
        c.info.prompt_token_ids +
        static_cast<int64_t>(std::ceil(c.info.prompt_text.size() / CharsPerToken()));
    const bool has_long_pool = queues.count("long") > 0;
    for (int64_t limit : {L.max_prompt_tokens, has_long_pool ? L.long_prompt_tokens : 0}) {
      if (limit > 0 && L.exact_near_limit && !c.info.prompt_text.empty() &&
          prompt_tokens > limit * 3 / 4 && prompt_tokens < limit * 5 / 4) {
        const int64_t exact = co_await ExactTokens(c.ticket.pool, c.info.prompt_text);
        if (exact >= 0) prompt_tokens = exact + c.info.prompt_token_ids;
        break;
      }
    }
    if (has_long_pool && L.long_prompt_tokens > 0 && prompt_tokens > L.long_prompt_tokens) {
      c.ticket.pool = "long";
    } else if (L.max_prompt_tokens > 0 && prompt_tokens > L.max_prompt_tokens) {
      const std::string why = fmt::format(
          "the prompt is about {} tokens, over the gateway's "
          "limit of {} (limits.max_prompt_tokens); shorten it",
          prompt_tokens, L.max_prompt_tokens);
      co_await RejectLimit(ex, c, why);
      co_return;
    }
    const int64_t out_tokens = c.info.max_tokens >= 0 ? c.info.max_tokens : L.default_max_tokens;
    c.ticket.tokens = prompt_tokens + out_tokens * c.info.n;
    // Class, tenant, deadline, affinity.
    const AdmissionConfig& A = config.admission;
    FairQueue& queue = queues.at(c.ticket.pool);
    c.ticket.id = c.id;
    c.ticket.class_index = queue.ClassIndex(http::FindHeader(req.headers, A.priority_header));
    c.ticket.tenant = std::string(http::FindHeader(req.headers, A.tenant_header));
    if (c.ticket.tenant.empty()) {
      c.ticket.tenant = BearerKey(http::FindHeader(req.headers, "Authorization"));
    }
    int64_t deadline_ms = 0;
    const std::string_view deadline_text = http::FindHeader(req.headers, A.deadline_header);
    if (!deadline_text.empty()) {
      // The whole value must be the number: "1abc" or "1e300" is refused, not read as 1.
      if (!ParseInt64(deadline_text, &deadline_ms) || deadline_ms <= 0 ||
          deadline_ms > 86'400'000) {
        const std::string why = fmt::format(
            "header {}: '{}' is not a deadline in "
            "milliseconds (1..86400000)",
            A.deadline_header, deadline_text);
        co_await RejectLimit(ex, c, why);
        co_return;
      }
    }
    const int64_t class_deadline = A.classes[c.ticket.class_index].deadline_ns;
    if (deadline_ms > 0) {
      c.ticket.deadline_ns = c.arrival_ns + deadline_ms * kNsPerMs;
    } else if (class_deadline > 0) {
      c.ticket.deadline_ns = c.arrival_ns + class_deadline;
    }
    if (config.routing.policy == RoutingPolicy::kPrefix) {
      c.ticket.key = PrefixKey(c.info.prompt_text, config.routing.prefix_chars);
    } else if (config.routing.policy == RoutingPolicy::kSession) {
      std::string_view session = http::FindHeader(req.headers, config.routing.session_header);
      c.ticket.key = SessionKey(session.empty() ? std::string_view(c.info.user) : session);
    }
    // Dynamic batching.
    if (config.batching.enabled && !draining &&
        (c.endpoint == Endpoint::kEmbeddings || c.endpoint == Endpoint::kCompletions)) {
      std::optional<std::string> key = BatchKey(c.endpoint, req.body);
      if (key) {
        co_await ServeBatched(ex, c, *key);
        co_return;
      }
    }
    // Admission, routing, relay, retries.
    http::OutgoingRequest up;
    up.method = req.method;
    up.target = std::string(req.target);
    up.headers = {{"Content-Type", "application/json"}, {"X-Request-Id", c.request_id}};
    if (std::string_view auth = http::FindHeader(req.headers, "Authorization"); !auth.empty()) {
      up.headers.push_back({"Authorization", std::string(auth)});
    }
    up.body = req.body;
    for (int attempt = 0;; ++attempt) {
      int64_t retry_after = 0;
      const int64_t queued_at = MonoNowNs();
      WatchClient(ex, c.ticket);
      Replica* r = co_await Acquire(c.ticket, &retry_after);
      ex.OnClientGone(nullptr);
      if (!r && c.ticket.client_gone) {
        LeftWhileQueued(c);
        co_return;
      }
      if (!r) {
        if (attempt > 0 && c.ticket.shed == Shed::kNoReplica) {
          const std::string why = "every replica tried failed before answering";
          co_await RespondError(ex, c, 502, "upstream_error", why, kNoHeaders);
          c.reason = "upstream";
          co_return;
        }
        co_await Reject(ex, c, c.ticket.shed, retry_after);
        co_return;
      }
      const int64_t seat_ns = MonoNowNs();
      c.queue_ns += seat_ns - queued_at;
      if (attempt == 0) {
        ++counters.admitted;
        telemetry.queue_seconds->RecordGauge(WallNowNs(), NsToSeconds(c.queue_ns));
      }
      c.replica = r->name;
      const bool can_retry = attempt < config.retries;
      Answer a = co_await Forward(*r, up, c.info.stream, can_retry, &ex, c.request_id);
      Release(r, c.ticket.tokens);
      if (!a.client_gone) {  // a request cut short says nothing of the service time
        mean_service_ns = 0.9 * mean_service_ns + 0.1 * static_cast<double>(MonoNowNs() - seat_ns);
      }
      if (a.retry && can_retry) {
        ++counters.retries;
        ++c.retries;
        telemetry.retries->AddCounter(WallNowNs(), 1);
        telemetry.Event("retry", r->name, {{"request", c.request_id}, {"error", a.error}});
        c.ticket.exclude.insert(r->index);
        c.ticket.assigned = nullptr;
        continue;
      }
      if (a.first_ns > 0) {
        c.ttft_ns = a.first_ns - c.arrival_ns;
        telemetry.ttft_seconds->RecordGauge(WallNowNs(), NsToSeconds(c.ttft_ns));
        if (config.ttft_slo_ns > 0) {
          telemetry.slo_met->RecordGauge(WallNowNs(), c.ttft_ns <= config.ttft_slo_ns ? 1 : 0);
        }
      }
      if (a.client_gone) {
        c.status = 499;
        c.reason = "client_gone";
        co_return;
      }
      if (ex.responded()) {  // streamed
        c.status = a.status;
        if (a.upstream_failed) c.reason = "upstream";
        if (a.client_behind) c.reason = "client_too_slow";
        if (a.drain_cut) c.reason = "drain_timeout";
        co_return;
      }
      if (a.drain_cut) {
        c.reason = "drain_timeout";
        co_await RespondError(ex, c, 503, "service_unavailable", a.error, kRetryAfterOne);
        co_return;
      }
      if (!a.answered()) {
        c.reason = "upstream";
        const std::string why = fmt::format("the replica failed: {}", a.error);
        co_await RespondError(ex, c, 502, "upstream_error", why, kNoHeaders);
        co_return;
      }
      c.status = a.status;
      std::string_view type = http::FindHeader(a.headers, "Content-Type");
      http::Headers extra = {{"X-Request-Id", c.request_id}, {"X-Titan-Replica", r->name}};
      const std::string content_type(type.empty() ? "application/json" : type);
      co_await ex.Respond(a.status, content_type, std::move(a.body), extra);
      co_return;
    }
  }

  // ---- batching ----
  awaitable<void> ServeBatched(http::Exchange& ex, Context& c, const std::string& key) {
    Member m;
    m.body = ex.request().body;
    m.prompt_bytes = c.info.prompt_text.size();
    m.id = c.id;
    Signal wake(executor);
    m.wake = &wake;
    Batch& b = batches[key];
    if (b.members.empty()) {
      b.endpoint = c.endpoint;
      b.target = std::string(ex.request().target);
      b.generation = ++batch_generation;
      if (config.batching.max_queue_delay_ns > 0) {
        asio::co_spawn(executor, FlushAfter(key, b.generation), asio::detached);
      }
    }
    b.members.push_back(&m);
    const size_t size = b.members.size();
    const auto& preferred = config.batching.preferred_sizes;
    if (size >= config.batching.max_batch_size || config.batching.max_queue_delay_ns == 0 ||
        (!preferred.empty() && size == preferred.back())) {
      Flush(key);
    }
    co_await wake.Wait();
    c.batch = 1;
    c.status = m.status;
    c.replica = "batch";
    http::Headers extra = {{"X-Request-Id", c.request_id}};
    co_await ex.Respond(m.status, "application/json", std::move(m.answer), extra);
  }

  awaitable<void> FlushAfter(std::string key, uint64_t generation) {
    asio::steady_timer timer(executor,
                             std::chrono::nanoseconds(config.batching.max_queue_delay_ns));
    co_await timer.async_wait(kNoThrow);
    auto it = batches.find(key);
    if (it != batches.end() && it->second.generation == generation) Flush(key);
  }

  void Flush(const std::string& key) {
    auto it = batches.find(key);
    if (it == batches.end()) return;
    Batch batch = std::move(it->second);
    batches.erase(it);
    asio::co_spawn(executor, RunBatch(std::move(batch)), asio::detached);
  }

  awaitable<void> RunBatch(Batch batch) {
    auto finish = [&](int status, const std::string& body) {
      for (Member* m : batch.members) {
        m->status = status;
        m->answer = body;
        m->wake->Notify();
      }
    };
    std::vector<std::string_view> bodies;
    std::vector<size_t> prompt_bytes;
    int64_t tokens = 0;
    for (Member* m : batch.members) {
      bodies.push_back(m->body);
      prompt_bytes.push_back(m->prompt_bytes);
      tokens += static_cast<int64_t>(m->prompt_bytes / CharsPerToken()) + 1;
    }
    Result<std::string> merged = MergeBodies(batch.endpoint, bodies);
    if (!merged.ok()) {
      finish(500, http::JsonError(merged.status().message(), "server_error", 500));
      co_return;
    }
    ++counters.batches;
    counters.batched += batch.members.size();
    telemetry.batch_size->RecordGauge(WallNowNs(), static_cast<double>(batch.members.size()));
    Ticket t;
    t.id = next_id++;
    t.class_index = queues.at("default").ClassIndex("");
    t.tokens = tokens;
    http::OutgoingRequest up;
    up.target = batch.target;
    up.headers = {{"Content-Type", "application/json"}};
    up.body = std::move(*merged);
    for (int attempt = 0;; ++attempt) {
      int64_t retry_after = 0;
      Replica* r = co_await Acquire(t, &retry_after);
      if (!r) {
        const int status = t.shed == Shed::kNoReplica || t.shed == Shed::kDraining ? 503 : 429;
        telemetry.Rejections(ShedName(t.shed))->AddCounter(WallNowNs(), batch.members.size());
        counters.shed += batch.members.size();
        finish(status, http::JsonError(fmt::format("batch refused: {}", ShedName(t.shed)),
                                       "rate_limited", status));
        co_return;
      }
      counters.admitted += attempt == 0 ? batch.members.size() : 0;
      const int64_t seat_ns = MonoNowNs();
      const bool can_retry = attempt < config.retries;
      Answer a = co_await Forward(*r, up, false, can_retry, nullptr, kNoId);
      Release(r, t.tokens);
      mean_service_ns = 0.9 * mean_service_ns + 0.1 * static_cast<double>(MonoNowNs() - seat_ns);
      if (a.retry && can_retry) {
        ++counters.retries;
        telemetry.retries->AddCounter(WallNowNs(), 1);
        telemetry.Event("retry", r->name, {{"batch", batch.members.size()}, {"error", a.error}});
        t.exclude.insert(r->index);
        t.assigned = nullptr;
        continue;
      }
      if (a.status != 200 || !a.answered()) {
        finish(a.answered() ? a.status : 502,
               a.answered() ? a.body
                            : http::JsonError(fmt::format("the replica failed: {}", a.error),
                                              "upstream_error", 502));
        co_return;
      }
      Result<std::vector<std::string>> parts = SplitResponse(batch.endpoint, a.body, prompt_bytes);
      if (!parts.ok() || parts->size() != batch.members.size()) {
        r->errors_s->AddCounter(WallNowNs(), 1);
        finish(502, http::JsonError(fmt::format("the replica's batch answer is unusable: {}",
                                                parts.status().message()),
                                    "upstream_error", 502));
        co_return;
      }
      for (size_t i = 0; i < batch.members.size(); ++i) {
        batch.members[i]->status = 200;
        batch.members[i]->answer = std::move((*parts)[i]);
        batch.members[i]->wake->Notify();
      }
      co_return;
    }
  }

  // ---- plain proxying (paths the gateway does not inspect) ----
  awaitable<void> HandlePlain(http::Exchange& ex) {
    Context c;
    c.id = next_id++;
    c.arrival_ns = ex.received_ns();
    c.request_id = fmt::format("gw-{:x}-{}", WallNowNs() / 1000, c.id);
    c.ticket.id = c.id;
    c.ticket.class_index = queues.at("default").ClassIndex("");
    const http::Request& req = ex.request();
    int64_t retry_after = 0;
    WatchClient(ex, c.ticket);
    Replica* r = co_await Acquire(c.ticket, &retry_after);
    ex.OnClientGone(nullptr);
    if (!r && c.ticket.client_gone) {
      LeftWhileQueued(c);
      co_return;
    }
    if (!r) {
      co_await Reject(ex, c, c.ticket.shed, retry_after);
      co_return;
    }
    http::OutgoingRequest up;
    up.method = req.method;
    up.target = req.target;
    if (std::string_view type = http::FindHeader(req.headers, "Content-Type"); !type.empty()) {
      up.headers.push_back({"Content-Type", std::string(type)});
    }
    up.body = req.body;
    Answer a = co_await Forward(*r, up, false, false, &ex, c.request_id);
    Release(r, 0);
    if (ex.responded() || a.client_gone) co_return;
    if (a.drain_cut) {
      co_await RespondError(ex, c, 503, "service_unavailable", a.error, kRetryAfterOne);
      co_return;
    }
    if (!a.answered()) {
      co_await RespondError(ex, c, 502, "upstream_error", a.error, kNoHeaders);
      co_return;
    }
    std::string_view type = http::FindHeader(a.headers, "Content-Type");
    const std::string content_type(type.empty() ? "application/json" : type);
    const http::Headers extra = {{"X-Titan-Replica", r->name}};
    co_await ex.Respond(a.status, content_type, std::move(a.body), extra);
  }

  // 405 with the Allow header, for `path` asked with another method than `allowed`.
  static awaitable<void> RespondMethodNotAllowed(http::Exchange& ex, std::string_view path,
                                                 std::string_view allowed) {
    std::string text =
        http::JsonError(fmt::format("{} takes {}", path, allowed), "invalid_request_error", 405);
    const http::Headers allow = {{"Allow", std::string(allowed)}};
    co_await ex.Respond(405, "application/json", std::move(text), allow);
  }

  awaitable<void> Handle(http::Exchange& ex) {
    ++handlers;
    struct Count {
      int& n;
      ~Count() { --n; }
    } count{handlers};
    co_await Route(ex);
  }

  awaitable<void> Route(http::Exchange& ex) {
    const http::Request& req = ex.request();
    const std::string_view path = req.path();
    if ((path == "/healthz" || path == "/metrics" || path == "/admin/replicas") &&
        req.method != "GET" && req.method != "HEAD") {
      co_await RespondMethodNotAllowed(ex, path, "GET");  // DELETE /admin/replicas was a 200
      co_return;
    }
    if (path == "/healthz") {
      int ready = 0;
      for (const auto& r : replicas) ready += !r->removed && r->health.Routable();
      const int status = draining || ready == 0 ? 503 : 200;
      nlohmann::json body = {{"status", draining ? "draining"
                                        : ready  ? "ok"
                                                 : "no_replica"},
                             {"ready_replicas", ready},
                             {"replicas", replicas.size()}};
      std::string text = body.dump();
      co_await ex.Respond(status, "application/json", std::move(text));
      co_return;
    }
    if (path == "/metrics") {
      const std::string_view accept = http::FindHeader(req.headers, "Accept");
      std::string text = telemetry.RenderMetrics(accept);
      const std::string_view content_type = ContentType(NegotiateFormat(accept));
      co_await ex.Respond(200, content_type, std::move(text));
      co_return;
    }
    if (path == "/admin/replicas") {
      nlohmann::json list = nlohmann::json::array();
      for (const ReplicaSnapshot& s : Snapshot()) {
        list.push_back({{"url", s.url},
                        {"pool", s.pool},
                        {"state", s.state},
                        {"in_flight", s.in_flight},
                        {"limit", s.limit},
                        {"ejections", s.ejections},
                        {"queued", s.queued},
                        {"restarts", s.restarts}});
      }
      std::string text = nlohmann::json({{"replicas", list}}).dump();
      co_await ex.Respond(200, "application/json", std::move(text));
      co_return;
    }
    const Endpoint endpoint = EndpointForPath(path);
    if (endpoint != Endpoint::kOther) {
      if (req.method != "POST") {
        co_await RespondMethodNotAllowed(ex, path, "POST");
        co_return;
      }
      co_await HandleApi(ex, endpoint);
      co_return;
    }
    if (path.starts_with("/v1/") || path == "/tokenize" || path == "/detokenize") {
      co_await HandlePlain(ex);
      co_return;
    }
    std::string text = http::JsonError(fmt::format("no route for {}; the gateway serves /v1/... "
                                                   "(OpenAI API), /healthz, /metrics and "
                                                   "/admin/replicas",
                                                   path),
                                       "invalid_request_error", 404);
    co_await ex.Respond(404, "application/json", std::move(text));
  }

  void WriteAccessLog(const Context& c) {
    if (!access_log) return;
    nlohmann::json line = {
        {"time_ns", WallNowNs()},
        {"id", c.request_id},
        {"endpoint", EndpointName(c.endpoint)},
        {"status", c.status},
        {"tenant", c.ticket.tenant},
        {"class", queues.at(c.ticket.pool).ClassName(c.ticket.class_index)},
        {"pool", c.ticket.pool},
        {"replica", c.replica},
        {"queue_ms", NsToSeconds(c.queue_ns) * 1e3},
        {"ttft_ms", c.ttft_ns >= 0 ? nlohmann::json(NsToSeconds(c.ttft_ns) * 1e3) : nullptr},
        {"e2e_ms", NsToSeconds(MonoNowNs() - c.arrival_ns) * 1e3},
        {"tokens_budgeted", c.ticket.tokens},
        {"retries", c.retries},
        {"batched", c.batch > 0},
    };
    if (!c.reason.empty()) line["reason"] = c.reason;
    std::string text = line.dump();
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), access_log);
  }

  // ---- background ----
  void StartWarmup(Replica& r) {
    if (r.warming) return;
    r.warming = true;
    asio::co_spawn(executor, Warmup(&r), asio::detached);
  }

  awaitable<void> Warmup(Replica* r) {
    for (int i = 0; i < config.health.warmup_requests && !stopping; ++i) {
      http::OutgoingRequest req;
      req.target = r->url.path + "/v1/completions";
      req.host = r->host_header;
      req.headers = {{"Content-Type", "application/json"}};
      req.body = R"({"prompt":"Hello, warm up.","max_tokens":4,"temperature":0})";
      Result<http::FetchedResponse> got =
          co_await http::FetchAsync(r->endpoint, req, 60 * kNsPerSecond);
      if (!got.ok()) break;  // a health check decides what happens next
    }
    r->warming = false;
    if (stopping) co_return;
    if (chars_per_token == 0) co_await Calibrate(*r);
    Record(r->health.OnWarmedUp(MonoNowNs()), *r);
  }

  // chars per token from the replica's tokenizer on a stretch of ordinary text.
  awaitable<void> Calibrate(Replica& r) {
    static const std::string kSample =
        "The gateway estimates prompt lengths from their size in bytes. This sentence and the "
        "next one give it the ratio of this replica's tokenizer: plain English words, numbers "
        "such as 1024 and 3.14, and punctuation, the mix most prompts have.";
    const int64_t count = co_await Tokenize(r, kSample);
    if (count <= 0) co_return;
    chars_per_token = static_cast<double>(kSample.size()) / count;
    telemetry.Event("calibrated", r.name, {{"chars_per_token", chars_per_token}});
  }

  awaitable<void> Check(Replica* r) {
    http::OutgoingRequest req;
    req.method = "GET";
    req.target = r->url.path + config.health.path;
    req.host = r->host_header;
    Result<http::FetchedResponse> got =
        co_await http::FetchAsync(r->endpoint, req, config.health.timeout_ns, 1 << 16);
    r->checking = false;
    if (stopping || r->removed) co_return;
    const bool ok = got.ok() && got->status == 200;
    // A refused connection or a bad answer is the replica's doing; a timeout may be our own
    // loop's, so it never ejects the last ready replica of a pool.
    const bool timed_out = !got.ok() && got.status().code() == StatusCode::kDeadlineExceeded;
    bool other_ready = false;
    for (const auto& other : replicas) {
      other_ready |=
          other.get() != r && !other->removed && other->pool == r->pool && other->health.Routable();
    }
    Record(r->health.OnHealthCheck(ok, MonoNowNs(), !timed_out || other_ready), *r);
  }

  awaitable<void> Scrape(Replica* r) {
    http::OutgoingRequest req;
    req.method = "GET";
    req.target = r->url.path + "/metrics";
    req.host = r->host_header;
    const int64_t timeout = std::max<int64_t>(config.scrape_interval_ns * 4, kNsPerSecond);
    Result<http::FetchedResponse> got =
        co_await http::FetchAsync(r->endpoint, req, timeout, 4 << 20);
    r->scraping = false;
    if (!got.ok() || got->status != 200) co_return;
    double waiting = -1;
    ParsePrometheusText(got->body, [&](const PrometheusSample& s) {
      if (s.name == "vllm:num_requests_waiting" || s.name == "llamacpp:requests_deferred") {
        waiting = std::max(waiting, 0.0) + s.value;
      }
    });
    if (waiting >= 0) r->queued = waiting;
  }

  template <typename Body>
  awaitable<void> Every(int64_t interval_ns, Body body) {
    asio::steady_timer timer(executor);
    int64_t next = MonoNowNs();
    while (!stopping) {
      body();
      next += interval_ns;
      const int64_t now = MonoNowNs();
      if (next < now) next = now;  // fell behind: no catch-up burst
      timer.expires_at(SteadyAt(next));
      co_await timer.async_wait(kNoThrow);
    }
  }

  void HealthTick() {
    for (const auto& rp : replicas) {
      Replica* r = rp.get();
      if (r->removed || r->checking || r->health.state() == ReplicaState::kDown) continue;
      r->checking = true;
      asio::co_spawn(executor, Check(r), asio::detached);
    }
  }

  void ScrapeTick() {
    const int64_t wall = WallNowNs();
    for (const auto& rp : replicas) {
      Replica* r = rp.get();
      telemetry.Counter("in_flight " + r->name, wall, r->in_flight);
      r->inflight_s->RecordGauge(wall, r->in_flight);
      r->limit_s->RecordGauge(wall, r->limit);
      r->ready_s->RecordGauge(wall, r->health.Routable() ? 1 : 0);
      if (config.scrape_interval_ns == 0 || r->removed || r->scraping || !r->health.Routable()) {
        continue;
      }
      r->scraping = true;
      asio::co_spawn(executor, Scrape(r), asio::detached);
    }
    size_t queued = 0;
    for (auto& [pool, queue] : queues) queued += queue.size();
    telemetry.Counter("queue_depth", wall, static_cast<double>(queued));
    RecordQueueDepths();
    if (access_log) std::fflush(access_log);
  }

  void OutlierTick() {
    std::vector<IntervalStats> stats;
    std::vector<ReplicaHealth*> healths;
    std::vector<Replica*> routable;
    size_t total = 0, out = 0;
    for (const auto& rp : replicas) {
      if (rp->removed) continue;
      ++total;
      if (!rp->health.Routable()) {
        ++out;
        continue;
      }
      stats.push_back(rp->interval);
      healths.push_back(&rp->health);
      routable.push_back(rp.get());
    }
    std::vector<std::string> verdicts =
        EvaluateOutliers(stats, healths, config.outlier, total, out);
    const int64_t now = MonoNowNs();
    for (size_t i = 0; i < routable.size(); ++i) {
      if (!verdicts[i].empty()) Record(routable[i]->health.Eject(verdicts[i], now), *routable[i]);
    }
    for (const auto& rp : replicas) {
      Replica& r = *rp;
      if (config.admission.adaptive && !r.interval_ttfts.empty()) {
        std::sort(r.interval_ttfts.begin(), r.interval_ttfts.end());
        const int64_t p90 = r.interval_ttfts[(r.interval_ttfts.size() * 9) / 10];
        const int before = r.limit;
        if (p90 > config.admission.target_ttft_ns) {
          r.limit = std::max(config.admission.min_inflight, static_cast<int>(r.limit * 0.8));
        } else if (r.saturated) {
          r.limit = std::min(config.admission.max_inflight_per_replica, r.limit + 1);
        }
        if (r.limit != before) Dispatch();
      }
      r.interval = {};
      r.interval_ttfts.clear();
      r.saturated = false;
    }
  }

  void StartBackground() {
    asio::co_spawn(executor, Every(config.health.interval_ns, [this] { HealthTick(); }),
                   asio::detached);
    asio::co_spawn(executor,
                   Every(std::max<int64_t>(config.scrape_interval_ns, 50 * kNsPerMs),
                         [this] { ScrapeTick(); }),
                   asio::detached);
    asio::co_spawn(executor, Every(config.outlier.interval_ns, [this] { OutlierTick(); }),
                   asio::detached);
  }

  void OnProcessEvent(const ReplicaProcessEvent& e) {
    for (const auto& rp : replicas) {
      Replica& r = *rp;
      if (r.launched != e.index) continue;
      telemetry.Event("process_" + e.type, r.name,
                      {{"pid", e.pid}, {"port", e.port}, {"detail", e.detail}});
      if (e.type == "spawned") Record(r.health.OnProcessStart(), r);
      if (e.type == "exited" || e.type == "spawn_failed")
        Record(r.health.OnProcessExit(e.detail), r);
    }
  }

  std::vector<ReplicaSnapshot> Snapshot() const {
    std::vector<ReplicaSnapshot> out;
    for (const auto& r : replicas) {
      if (r->removed) continue;
      ReplicaSnapshot s;
      s.url = r->name;
      s.pool = r->pool;
      s.state = std::string(ReplicaStateName(r->health.state()));
      s.in_flight = r->in_flight;
      s.limit = r->limit;
      s.ejections = r->health.ejections();
      s.queued = r->queued;
      s.restarts = launcher && r->launched >= 0 ? launcher->restarts(r->launched) : 0;
      out.push_back(s);
    }
    return out;
  }

  // Runs `f` on the loop and waits for its result.
  template <typename F>
  auto OnLoop(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto future = task.get_future();
    asio::post(executor, [&task] { task(); });
    return future.get();
  }

  Status ApplyConfig(GatewayConfig next) {
    TITAN_RETURN_IF_ERROR(ValidateConfig(next));
    if (next.listen_address != config.listen_address || next.listen_port != config.listen_port) {
      return InvalidArgumentError(fmt::format(
          "listen cannot change on reload: the gateway serves {}:{}, the new configuration says "
          "{}:{} (from the file or --listen; 127.0.0.1:8000 when neither sets it); restart the "
          "gateway to move it, or keep listen as it is",
          config.listen_address, config.listen_port, next.listen_address, next.listen_port));
    }
    if (next.launch.command != config.launch.command ||
        next.launch.replicas != config.launch.replicas) {
      return InvalidArgumentError("launch cannot change on reload: restart the gateway");
    }
    // Static replicas: keep those still listed, add new ones, retire the rest.
    std::set<std::string> wanted;
    for (const ReplicaConfig& rc : next.replicas) wanted.insert(rc.url);
    std::set<std::string> have;
    for (const auto& r : replicas) {
      if (r->launched >= 0 || r->removed) continue;
      have.insert(r->name);
    }
    for (const ReplicaConfig& rc : next.replicas) {
      if (have.count(rc.url)) continue;
      Result<http::Url> url = http::ParseUrl(rc.url);
      if (!url.ok()) return url.status();
    }
    const int old_limit = config.admission.max_inflight_per_replica;
    config = std::move(next);
    health_config = config.health;
    outlier_config = config.outlier;
    router->Reconfigure(config.routing);
    for (auto& [pool, queue] : queues) queue.Reconfigure(config.admission);
    queue_depth_series.clear();  // class names may have changed
    for (const auto& r : replicas) {
      if (r->launched < 0 && !r->removed && !wanted.count(r->name)) {
        r->removed = true;
        telemetry.Event("replica_removed", r->name, {});
      }
      if (r->limit == old_limit || r->limit > config.admission.max_inflight_per_replica) {
        r->limit = config.admission.max_inflight_per_replica;
      }
    }
    for (const ReplicaConfig& rc : config.replicas) {
      if (have.count(rc.url)) continue;
      Status added = AddReplica(rc, -1);
      if (!added.ok()) return added;
      telemetry.Event("replica_added", rc.url, {});
    }
    telemetry.Event("reload", "", {{"replicas", config.replicas.size()}});
    Dispatch();
    return OkStatus();
  }
};

Gateway::Gateway(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Gateway::~Gateway() { Stop(); }

Result<std::unique_ptr<Gateway>> Gateway::Start(GatewayConfig config) {
  TITAN_RETURN_IF_ERROR(ValidateConfig(config));
  auto impl = std::make_shared<Impl>();
  impl->config = config;
  impl->health_config = config.health;
  impl->outlier_config = config.outlier;
  impl->router = std::make_unique<Router>(config.routing);
  TITAN_RETURN_IF_ERROR(impl->telemetry.Open(config.event_log));
  if (!config.access_log.empty()) {
    impl->access_log =
        config.access_log == "-" ? stdout : std::fopen(config.access_log.c_str(), "a");
    if (!impl->access_log) {
      return ErrnoError(errno, fmt::format("opening the access log {}", config.access_log));
    }
  }
  for (const ReplicaConfig& rc : config.replicas) {
    TITAN_RETURN_IF_ERROR_CTX(impl->AddReplica(rc, -1), fmt::format("replica {}", rc.url));
  }
  http::ServerOptions options;
  options.address = config.listen_address;
  options.port = config.listen_port;
  options.threads = 1;
  options.max_body_bytes = config.limits.max_body_bytes;
  options.max_connections = ClientConnectionCap(options.max_connections);
  Impl* raw = impl.get();
  TITAN_ASSIGN_OR_RETURN(impl->server,
                         http::Server::Start(options, [raw](http::Exchange& ex) -> awaitable<void> {
                           return raw->Handle(ex);
                         }));
  impl->executor = impl->server->executor();
  if (!config.launch.command.empty()) {
    LaunchOptions launch;
    launch.command = config.launch.command;
    launch.replicas = config.launch.replicas;
    launch.memory_max_bytes = config.launch.memory_max_bytes;
    launch.log_dir = config.launch.log_dir;
    std::weak_ptr<Impl> weak = impl;
    auto launched = ReplicaLauncher::Start(launch, [weak](const ReplicaProcessEvent& e) {
      if (auto self = weak.lock()) {
        asio::post(self->executor, [weak, e] {
          if (auto s = weak.lock()) s->OnProcessEvent(e);
        });
      }
    });
    if (!launched.ok()) return launched.status().WithContext("--launch");
    impl->launcher = std::move(*launched);
    std::vector<std::string> urls = impl->launcher->urls();
    Status added = raw->OnLoop([&] {
      for (size_t i = 0; i < urls.size(); ++i) {
        TITAN_RETURN_IF_ERROR(raw->AddReplica({urls[i], "default"}, static_cast<int>(i)));
      }
      return OkStatus();
    });
    TITAN_RETURN_IF_ERROR(added);
  }
  raw->OnLoop([&] {
    raw->telemetry.Event("start", "",
                         {{"port", raw->server->port()},
                          {"replicas", raw->replicas.size()},
                          {"routing", RoutingPolicyName(config.routing.policy)}});
    raw->StartBackground();
    return 0;
  });
  return std::unique_ptr<Gateway>(new Gateway(std::move(impl)));
}

int Gateway::port() const { return impl_->server ? impl_->server->port() : 0; }

Status Gateway::Reload(GatewayConfig config) {
  return impl_->OnLoop([&] { return impl_->ApplyConfig(std::move(config)); });
}

int Gateway::Drain() {
  Impl* impl = impl_.get();
  if (!impl->server) return 0;
  impl->OnLoop([impl] {
    impl->draining = true;
    impl->telemetry.Event("drain", "", {{"in_flight", impl->counters.in_flight}});
    for (auto& [pool, queue] : impl->queues) {
      while (const Waiter* w = queue.Peek()) {
        Ticket* t = static_cast<Ticket*>(w->owner);
        queue.Pop();
        t->shed = Shed::kDraining;
        t->wake->Notify();
      }
    }
    return 0;
  });
  impl->server->StopAccepting();
  const int64_t deadline = MonoNowNs() + impl->config.drain_timeout_ns;
  uint64_t left = 0;
  for (;;) {
    left = impl->OnLoop([impl] { return impl->counters.in_flight; });
    if (left == 0 || MonoNowNs() >= deadline) break;
    SleepUntilMonoNs(MonoNowNs() + 20 * kNsPerMs);
  }
  // What still runs is cut: each client gets a 503 (or an error event ending its stream), not
  // a connection closed without an answer when the server stops.
  impl->OnLoop([impl] {
    for (UpstreamCall* x : impl->calls) {
      x->drain_cut = true;
      if (x->connection) x->connection->Close();
      x->wake.Notify();
    }
    return 0;
  });
  const int64_t answered_by = MonoNowNs() + 2 * kNsPerSecond;
  while (impl->OnLoop([impl] { return impl->handlers; }) > 0 && MonoNowNs() < answered_by) {
    SleepUntilMonoNs(MonoNowNs() + 10 * kNsPerMs);
  }
  return static_cast<int>(left);
}

void Gateway::Stop() {
  Impl* impl = impl_.get();
  if (!impl || !impl->server) return;
  impl->OnLoop([impl] {
    impl->stopping = true;
    impl->telemetry.Event("stop", "", {{"in_flight", impl->counters.in_flight}});
    // Pooled connections belong to the loop's io_context: close them before it goes.
    for (const auto& r : impl->replicas) r->idle.clear();
    return 0;
  });
  // Replicas first, while the loop still takes the launcher's events; then the loop.
  if (impl->launcher) impl->launcher->Stop();
  impl->server->Stop();
  if (!impl->config.perfetto.empty()) {
    Status written = impl->telemetry.WritePerfetto(impl->config.perfetto);
    if (!written.ok()) Log(LogLevel::kWarning, "gateway", "{}", written.ToString());
  }
  if (impl->access_log) std::fflush(impl->access_log);
  // The loop has stopped (its thread joined), but its io_context still exists: connections a
  // request pooled while the server stopped are closed now, before the io_context goes (an
  // ASan run found them closed after it, a use after free).
  for (const auto& r : impl->replicas) r->idle.clear();
  // The coroutines died with the server's loop; nothing refers to the replicas any more.
  impl->server.reset();
}

std::vector<ReplicaSnapshot> Gateway::Replicas() const {
  if (!impl_->server) return {};
  return impl_->OnLoop([this] { return impl_->Snapshot(); });
}

GatewayCounters Gateway::Counters() const {
  if (!impl_->server) return impl_->counters;
  return impl_->OnLoop([this] { return impl_->counters; });
}

std::string Gateway::Metrics() const {
  if (!impl_->server) return "";
  return impl_->OnLoop([this] { return impl_->telemetry.RenderMetrics(""); });
}

}  // namespace titan::gateway
