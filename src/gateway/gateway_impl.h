// The gateway's insides (private to src/gateway): the state one event loop owns and the parts
// that act on it, each defined in the file of its job:
//   gateway.cc           start, reload, drain, stop;
//   api_requests.cc      one API request from inspection to its answer (limits, class, tenant,
//                        deadline, retries), plain proxying, the access log;
//   seats.cc             a request's claim on a replica: the queue, dispatch, release;
//   relay.cc             one request to the replicas and its answer back to the client: the
//                        upstream call, streaming, hedges and rescues;
//   replica_set.cc       the replicas: adding them, their state changes, health checks,
//                        scrapes, warm-up, outlier ejection, stall watch, supervised processes;
//   dynamic_batching.cc  batches of embeddings and non-streamed completions;
//   admin_endpoints.cc   routing of the gateway's own paths (/healthz, /metrics,
//                        /admin/replicas) and of the API.
// Threading: everything here runs on the http::Server's single loop (gateway.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "src/base/clock.h"
#include "src/gateway/admission.h"
#include "src/gateway/gateway.h"
#include "src/gateway/hedge_budget.h"
#include "src/gateway/openai_request.h"
#include "src/gateway/progress_watch.h"
#include "src/gateway/recent_latencies.h"
#include "src/gateway/replica_health.h"
#include "src/gateway/replica_launcher.h"
#include "src/gateway/router.h"
#include "src/gateway/telemetry.h"
#include "src/http/asio_names.h"
#include "src/http/client.h"
#include "src/http/server.h"

namespace titan::gateway {

using boost::asio::awaitable;
namespace asio = boost::asio;
using http::kNoThrow;

inline const http::Headers kNoHeaders;
inline const http::Headers kRetryAfterOne = {{"Retry-After", "1"}};
inline const std::string kNoId;

inline std::chrono::steady_clock::time_point SteadyAt(int64_t mono_ns) {
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

struct UpstreamCall;  // relay.cc

struct Replica {
  Replica(const HealthConfig* h, const OutlierConfig* o, const StallConfig* s, ReplicaState initial)
      : health(h, o, initial), watch(s) {}
  int index = 0;
  std::string name;  // the URL as given
  http::Url url;
  asio::ip::tcp::endpoint endpoint;
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
  // Stall watch: its progress, its calls in progress (those without a first token are rescued
  // when it stalls), how many of them have had a first byte.
  ProgressWatch watch;
  std::set<UpstreamCall*> calls;
  int streaming = 0;
  int64_t stalled_at_ns = 0;     // monotonic, while stalled
  bool probing = false;          // a probe request is out (stalled with nothing in flight)
  double generated_tokens = -1;  // its scraped generated-token counter (-1: none seen)
  // Capacity: mean seat time of its recent answers (seconds; 0: none yet) and the routing
  // weight it keeps while it is slow and the others cannot carry the load without it.
  double seat_seconds = 0;
  double slow_weight = 1;
  Series *inflight_s = nullptr, *ready_s = nullptr, *limit_s = nullptr, *ejections_s = nullptr,
         *errors_s = nullptr, *stalled_s = nullptr;
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

struct Race;  // relay.cc

// Counts a scope: `n` is one higher while it lives (a coroutine's, too, until its frame goes).
class ScopedCount {
 public:
  explicit ScopedCount(int& n) : n_(n) { ++n_; }
  ~ScopedCount() { --n_; }
  ScopedCount(const ScopedCount&) = delete;
  ScopedCount& operator=(const ScopedCount&) = delete;

 private:
  int& n_;
};

struct Gateway::Impl {
  GatewayConfig config;
  HealthConfig health_config;  // stable addresses for ReplicaHealth and ProgressWatch
  OutlierConfig outlier_config;
  StallConfig stall_config;
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
  // Requests arriving at each pool's admission since the last outlier tick, and the offered
  // load they make (requests/s), for the capacity check.
  struct PoolLoad {
    uint64_t arrivals = 0;
    double offered_rps = 0;
  };
  std::map<std::string, PoolLoad> pool_load;

  ~Impl() {
    if (access_log && access_log != stdout) std::fclose(access_log);
  }

  // Runs `f` on the loop and waits for its result (from another thread).
  template <typename F>
  auto OnLoop(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto future = task.get_future();
    asio::post(executor, [&task] { task(); });
    return future.get();
  }

  // ---- gateway.cc ----
  // A reload: everything but listen and launch (gateway.h).
  Status ApplyConfig(GatewayConfig next);

  // ---- api_requests.cc ----
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
    const char* hedge = nullptr;  // "delay" or "rescue" when the request was hedged
    bool hedge_won = false;       // its answer came from the hedge
    int64_t sent_wall_ns = 0;     // when its answer's attempt went to `replica` (wall clock)
  };
  awaitable<void> HandleApi(http::Exchange& ex, Endpoint endpoint);
  awaitable<void> ServeApi(http::Exchange& ex, Context& c);
  // Paths the gateway does not inspect: a seat, then relayed as they are.
  awaitable<void> HandlePlain(http::Exchange& ex);
  // Coroutine parameters are references to the caller's named locals: GCC 12 mishandles
  // temporaries inside co_await expressions.
  awaitable<void> RespondError(http::Exchange& ex, Context& c, int status, std::string_view type,
                               const std::string& message, const http::Headers& headers);
  // The client left while queued: its answer is nobody's (access log: 499).
  void LeftWhileQueued(Context& c);
  awaitable<void> Reject(http::Exchange& ex, Context& c, Shed shed, int64_t retry_after_s);
  // 400 for a limit, counted as "limit".
  awaitable<void> RejectLimit(http::Exchange& ex, Context& c, const std::string& message);
  void WriteAccessLog(const Context& c);

  // ---- seats.cc ----
  // Seats `t` on a replica, or returns nullptr when none may take it now. Affinity routing
  // (prefix, session with a key) chooses among every routable replica, full ones included,
  // and waits for its choice's seat: spilling to whichever replica has a seat would scatter a
  // prefix whenever the replicas are busy. The router's load bound still moves a key off a
  // replica that is loaded well above the others.
  Replica* TryPick(Ticket& t);
  // A seat for `t`, waiting in its queue if needed. nullptr with t.shed set when refused, or
  // with t.client_gone when the client left (WatchClient wakes the wait).
  awaitable<Replica*> Acquire(Ticket& t, int64_t* retry_after_s);
  // Gives a seat back and seats whoever waits for it.
  void Release(Replica* r, int64_t tokens);
  // Seats waiters of every pool while seats are free.
  void Dispatch();
  // Runs on every dispatch: the series are looked up once per pool and class set.
  void RecordQueueDepths();
  int TotalSeats(const std::string& pool) const;
  // A client that leaves while `t` waits for a seat ends the wait (Acquire then returns null
  // with t.client_gone): a fire-and-forget client must not keep a queue place.
  static void WatchClient(http::Exchange& ex, Ticket& t);

  // ---- relay.cc ----
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
    Replica* replica = nullptr;   // whose answer it is (the winner of a hedge)
    std::set<int> tried;          // replicas it went to (a retry goes elsewhere)
    const char* hedge = nullptr;  // "delay" or "rescue" when a hedge was sent
    bool hedge_won = false;
  };
  // What a request lets the relay do beyond its first attempt (HedgeCheck).
  struct HedgePolicy {
    bool allowed = false;  // hedging or rescue on, and its class allows them
    size_t class_index = 0;
    std::string pool = "default";
    int64_t prompt_tokens = 0;  // what a duplicate costs: the budget's unit
    int64_t seat_tokens = 0;    // prompt + max_tokens: a seat's share of a token budget
  };
  // Sends `request` to `r`, whose seat (of `seat_tokens`) the caller holds and hands over:
  // every seat the request takes is released here. When `client` is set, relays the answer to
  // it as it arrives (stream) or whole; with `client` null (batches) the answer is only
  // returned. With `hedge` allowed, the request may be hedged or rescued (relay.cc).
  awaitable<Answer> Forward(Replica& r, const http::OutgoingRequest& request, bool stream,
                            bool can_retry, http::Exchange* client, const std::string& id,
                            int64_t seat_tokens, const HedgePolicy* hedge);
  std::unique_ptr<http::ClientConnection> TakeIdle(Replica& r);
  // An attempt of `race` at `r` (whose seat the caller took), sent from its own coroutine.
  std::shared_ptr<UpstreamCall> StartAttempt(Race& race, Replica& r,
                                             const http::OutgoingRequest& request,
                                             int64_t seat_tokens, const char* hedge);
  // How long `x` has waited for its first byte (0 once it has one).
  static double FirstByteWaitMs(const UpstreamCall& x, int64_t now_ns);
  // An attempt ended: accounted on its replica (`failed`: the replica's failure), its
  // connection pooled or closed, its seat released.
  void EndAttempt(UpstreamCall& x, bool failed);
  // Races that may still get a hedge or a rescue (not committed).
  std::set<Race*> races;
  // First-token times of recent answers, all replicas, and their p95 as of the last stall tick.
  RecentLatencies fleet_ttft;
  int64_t hedge_ttft_p95_ns = 0;
  // The hedge budget of each priority class (same order as config.admission.classes).
  std::vector<HedgeBudget> hedge_budgets;
  // How long a streamed request may wait for its first token before a hedge.
  int64_t HedgeDelayNs() const;
  // Sends hedges and rescues that are due (see relay.cc), within budget and free seats.
  void HedgeCheck(int64_t now_ns);
  // The drain timeout ended: every upstream call still running is closed, and its client gets
  // a 503 (a stream: a final error event).
  void CutCallsForDrain();

  // ---- replica_set.cc ----
  Status AddReplica(const ReplicaConfig& rc, int launched);
  // Logs a state change of `r` (event log, metrics) and acts on it: warm-up, dispatch, shed
  // the waiters of a pool left without replicas.
  void Record(const std::optional<Transition>& t, Replica& r);
  // A ready (or stalled: it may be back any moment) replica of `t`'s pool that `t` has not
  // tried yet: else a request gets 503 at once (a retry goes elsewhere or fails).
  bool PoolHasUntried(const Ticket& t) const;
  bool PoolMayRecover(const std::string& pool) const;
  // Waiters of a pool with no ready replica keep waiting while one may come back (their own
  // timeout ends the wait); a pool with no replica at all sheds them now.
  void FailQueuedWithoutReplicas();
  // The replica's token count of `text` through its /tokenize (llama.cpp's {"content"} and
  // vLLM's {"prompt"} forms both answered), or -1 when it has none or fails.
  awaitable<int64_t> Tokenize(Replica& r, const std::string& text);
  // The exact prompt length from a ready replica of `pool`, or -1.
  awaitable<int64_t> ExactTokens(const std::string& pool, const std::string& text);
  double CharsPerToken() const;
  void StartWarmup(Replica& r);
  awaitable<void> Warmup(Replica* r);
  // chars per token from the replica's tokenizer on a stretch of ordinary text.
  awaitable<void> Calibrate(Replica& r);
  awaitable<void> Check(Replica* r);
  awaitable<void> Scrape(Replica* r);
  void HealthTick();
  void ScrapeTick();
  void OutlierTick();
  // Every stall.check_interval: stall detection, probes of stalled replicas, HedgeCheck.
  void StallTick();
  // A byte of an answer from `r` (`gap_ns` since the previous byte of that answer, or since
  // its send for its first): the stall watch's progress; a stalled replica is ready again.
  // Returns whether the gap is the answer's own behaviour (not a stall's).
  bool OnReplicaProgress(Replica& r, int64_t now_ns, int64_t gap_ns, bool first_byte);
  // The replica's work in flight changed: tells its stall watch.
  void UpdateWork(Replica& r);
  // A stalled replica with nothing of the gateway's in flight gets one small request, whose
  // answer is the progress that ends the stall (or whose failure ejects it).
  awaitable<void> Probe(Replica* r);
  // Ejections for slowness that the others could not absorb become routing weights
  // (capacity.h); `verdict` is the outlier rule's.
  void EjectOrWeigh(Replica& r, const OutlierVerdict& verdict, int64_t now_ns);
  // Rebuilds the hedge budgets (start, and reloads that change the classes).
  void ResetHedgeBudgets();
  void StartBackground();
  void OnProcessEvent(const ReplicaProcessEvent& e);
  std::vector<ReplicaSnapshot> Snapshot();
  // Runs `tick` every `interval_ns` until the gateway stops (no catch-up burst after a delay).
  awaitable<void> Every(int64_t interval_ns, void (Impl::*tick)());

  // ---- dynamic_batching.cc ----
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
  std::map<std::string, Batch> batches;  // pending members by batch key
  uint64_t batch_generation = 0;
  awaitable<void> ServeBatched(http::Exchange& ex, Context& c, const std::string& key);
  awaitable<void> FlushAfter(std::string key, uint64_t generation);
  void Flush(const std::string& key);
  // Every member of `batch` gets `status` and `body`.
  static void FinishBatch(Batch& batch, int status, const std::string& body);
  awaitable<void> RunBatch(Batch batch);

  // ---- admin_endpoints.cc ----
  // Every request the server takes comes here (counted, for the drain).
  awaitable<void> Handle(http::Exchange& ex);
  awaitable<void> Route(http::Exchange& ex);
  // 405 with the Allow header, for `path` asked with another method than `allowed`.
  static awaitable<void> RespondMethodNotAllowed(http::Exchange& ex, std::string_view path,
                                                 std::string_view allowed);
};

}  // namespace titan::gateway
