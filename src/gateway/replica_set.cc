// The replicas: adding them, their state changes, health checks, /metrics scrapes, warm-up and
// calibration, outlier ejection and supervised processes (gateway_impl.h).
#include <algorithm>

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <nlohmann/json.hpp>

#include "src/base/duration.h"
#include "src/base/json_depth.h"
#include "src/base/log.h"
#include "src/gateway/capacity.h"
#include "src/gateway/gateway_impl.h"
#include "src/metrics/text_parse.h"

namespace titan::gateway {

Status Gateway::Impl::AddReplica(const ReplicaConfig& rc, int launched) {
  TITAN_ASSIGN_OR_RETURN(http::Url url, http::ParseUrl(rc.url));
  TITAN_ASSIGN_OR_RETURN(asio::ip::tcp::endpoint endpoint, http::Resolve(url));
  auto r = std::make_unique<Replica>(&health_config, &outlier_config, &stall_config,
                                     ReplicaState::kStarting);
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
  r->stalled_s = telemetry.Stalled(r->name);
  if (!queues.count(rc.pool)) queues.emplace(rc.pool, FairQueue(config.admission));
  replicas.push_back(std::move(r));
  return OkStatus();
}

void Gateway::Impl::Record(const std::optional<Transition>& t, Replica& r) {
  if (!t) return;
  nlohmann::json fields = {
      {"from", ReplicaStateName(t->from)}, {"to", ReplicaStateName(t->to)}, {"reason", t->reason}};
  std::string type = "replica_state";
  const int64_t now = MonoNowNs();
  if (t->from == ReplicaState::kStalled) {
    fields["stalled_s"] = NsToSeconds(now - r.stalled_at_ns);
    r.stalled_s->RecordGauge(WallNowNs(), 0);
    telemetry.Counter("stalled " + r.name, WallNowNs(), 0);
  }
  if (t->to == ReplicaState::kStalled) {
    type = "stall";
    const int64_t silence = r.watch.SilenceNs(now);
    r.stalled_at_ns = now;
    r.generated_tokens = -1;  // the next scrape is the baseline: tokens from before the stall
                              // are no progress out of it
    fields["silence_s"] = NsToSeconds(silence);
    fields["threshold_s"] = NsToSeconds(r.watch.ThresholdNs(now, config.scrape_interval_ns));
    fields["in_flight"] = r.in_flight;
    telemetry.Stalls(r.name)->AddCounter(WallNowNs(), 1);
    telemetry.stall_detection_seconds->RecordGauge(WallNowNs(), NsToSeconds(silence));
    r.stalled_s->RecordGauge(WallNowNs(), 1);
    telemetry.Counter("stalled " + r.name, WallNowNs(), 1);
    Log(LogLevel::kWarning, "gateway", "{} stalled: {}", r.name, t->reason);
  } else if (t->from == ReplicaState::kStalled && t->to == ReplicaState::kReady) {
    type = "unstall";
    Log(LogLevel::kInfo, "gateway", "{} is making progress again after {}", r.name,
        FormatDurationShort(now - r.stalled_at_ns));
  } else if (t->to == ReplicaState::kEjected) {
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
    // Back from warm-up: a fresh limit. Back from a stall: as it was (a stall is no fault).
    if (t->from != ReplicaState::kStalled) r.limit = config.admission.max_inflight_per_replica;
    Dispatch();
  }
  if (!r.health.Routable()) FailQueuedWithoutReplicas();
}

bool Gateway::Impl::PoolHasUntried(const Ticket& t) const {
  for (const auto& r : replicas) {
    const bool serving =
        r->health.Routable() || r->health.state() == ReplicaState::kStalled;  // back any moment
    if (!r->removed && r->pool == t.pool && serving && !t.exclude.count(r->index)) return true;
  }
  return false;
}

bool Gateway::Impl::PoolMayRecover(const std::string& pool) const {
  for (const auto& r : replicas) {
    if (!r->removed && r->pool == pool) return true;
  }
  return false;
}

void Gateway::Impl::FailQueuedWithoutReplicas() {
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

awaitable<int64_t> Gateway::Impl::Tokenize(Replica& r, const std::string& text) {
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

awaitable<int64_t> Gateway::Impl::ExactTokens(const std::string& pool, const std::string& text) {
  for (const auto& r : replicas) {
    if (r->removed || r->pool != pool || !r->health.Routable()) continue;
    const int64_t count = co_await Tokenize(*r, text);
    co_return count;
  }
  co_return -1;
}

double Gateway::Impl::CharsPerToken() const {
  return chars_per_token > 0 ? chars_per_token : config.limits.chars_per_token;
}

void Gateway::Impl::StartWarmup(Replica& r) {
  if (r.warming) return;
  r.warming = true;
  asio::co_spawn(executor, Warmup(&r), asio::detached);
}

awaitable<void> Gateway::Impl::Warmup(Replica* r) {
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

awaitable<void> Gateway::Impl::Calibrate(Replica& r) {
  static const std::string kSample =
      "The gateway estimates prompt lengths from their size in bytes. This sentence and the "
      "next one give it the ratio of this replica's tokenizer: plain English words, numbers "
      "such as 1024 and 3.14, and punctuation, the mix most prompts have.";
  const int64_t count = co_await Tokenize(r, kSample);
  if (count <= 0) co_return;
  chars_per_token = static_cast<double>(kSample.size()) / count;
  telemetry.Event("calibrated", r.name, {{"chars_per_token", chars_per_token}});
}

awaitable<void> Gateway::Impl::Check(Replica* r) {
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

awaitable<void> Gateway::Impl::Scrape(Replica* r) {
  http::OutgoingRequest req;
  req.method = "GET";
  req.target = r->url.path + "/metrics";
  req.host = r->host_header;
  const int64_t timeout = std::max<int64_t>(config.scrape_interval_ns * 4, kNsPerSecond);
  Result<http::FetchedResponse> got = co_await http::FetchAsync(r->endpoint, req, timeout, 4 << 20);
  r->scraping = false;
  if (!got.ok() || got->status != 200) co_return;
  double waiting = -1, generated = -1;
  ParsePrometheusText(got->body, [&](const PrometheusSample& s) {
    if (s.name == "vllm:num_requests_waiting" || s.name == "llamacpp:requests_deferred") {
      waiting = std::max(waiting, 0.0) + s.value;
    }
    if (s.name == "vllm:generation_tokens_total" || s.name == "llamacpp:tokens_predicted_total") {
      generated = std::max(generated, 0.0) + s.value;
    }
  });
  if (waiting >= 0) r->queued = waiting;
  // Tokens the replica generated since the last scrape are progress that no stream of the
  // gateway's showed, when none is there (it is busy only with its own queue). While the
  // gateway has requests there, their bytes are the signal: a scrape just after a stall began
  // still counts the tokens from before it, and would put off the stall's detection by up to a
  // scrape interval.
  if (generated >= 0 && r->generated_tokens >= 0 && generated > r->generated_tokens &&
      r->in_flight == 0) {
    r->watch.OnScrapedProgress(MonoNowNs());
    Record(r->health.OnProgress("its generated-token count moved"), *r);
  }
  if (generated >= 0) r->generated_tokens = generated;
  UpdateWork(*r);
}

awaitable<void> Gateway::Impl::Every(int64_t interval_ns, void (Impl::*tick)()) {
  asio::steady_timer timer(executor);
  int64_t next = MonoNowNs();
  while (!stopping) {
    (this->*tick)();
    next += interval_ns;
    const int64_t now = MonoNowNs();
    if (next < now) next = now;  // fell behind: no catch-up burst
    timer.expires_at(SteadyAt(next));
    co_await timer.async_wait(kNoThrow);
  }
}

void Gateway::Impl::HealthTick() {
  for (const auto& rp : replicas) {
    Replica* r = rp.get();
    if (r->removed || r->checking || r->health.state() == ReplicaState::kDown) continue;
    r->checking = true;
    asio::co_spawn(executor, Check(r), asio::detached);
  }
}

void Gateway::Impl::ScrapeTick() {
  const int64_t wall = WallNowNs();
  for (const auto& rp : replicas) {
    Replica* r = rp.get();
    telemetry.Counter("in_flight " + r->name, wall, r->in_flight);
    r->inflight_s->RecordGauge(wall, r->in_flight);
    r->limit_s->RecordGauge(wall, r->limit);
    r->ready_s->RecordGauge(wall, r->health.Routable() ? 1 : 0);
    const bool stalled = r->health.state() == ReplicaState::kStalled;
    if (config.scrape_interval_ns == 0 || r->removed || r->scraping ||
        (!r->health.Routable() && !stalled)) {
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

void Gateway::Impl::OutlierTick() {
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
  const int64_t now = MonoNowNs();
  for (auto& [pool, load] : pool_load) {
    const double rps = static_cast<double>(load.arrivals) / NsToSeconds(config.outlier.interval_ns);
    // Up at once, down smoothly: a burst counts in full, a lull does not erase the load.
    load.offered_rps = std::max(rps, 0.7 * load.offered_rps + 0.3 * rps);
    load.arrivals = 0;
  }
  std::vector<OutlierVerdict> verdicts =
      EvaluateOutliers(stats, healths, config.outlier, total, out);
  for (size_t i = 0; i < routable.size(); ++i) {
    EjectOrWeigh(*routable[i], verdicts[i], now);
    StartNextInterval(&routable[i]->interval, &routable[i]->health, config.outlier,
                      verdicts[i].judged);
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
    if (r.removed || !r.health.Routable()) r.interval = {};  // numbers of before it was out
    r.interval_ttfts.clear();
    r.saturated = false;
  }
}

void Gateway::Impl::EjectOrWeigh(Replica& r, const OutlierVerdict& verdict, int64_t now_ns) {
  if (verdict.reason.empty()) {
    if (r.slow_weight < 1 && r.health.slow_intervals == 0) {
      r.slow_weight = 1;
      telemetry.Event("weight", r.name, {{"weight", 1}, {"reason", "no longer slow"}});
    }
    return;
  }
  if (!verdict.slow) {  // errors: it has no capacity and would swallow traffic
    Record(r.health.Eject(verdict.reason, now_ns), r);
    return;
  }
  std::vector<ReplicaCapacity> capacity;
  size_t self = 0;
  for (const auto& other : replicas) {
    if (other->removed || other->pool != r.pool) continue;
    if (other.get() == &r) self = capacity.size();
    capacity.push_back({other->limit, other->seat_seconds, other->health.Routable()});
  }
  const CapacityCheck check = OthersCanCarry(capacity, self, pool_load[r.pool].offered_rps,
                                             config.outlier.capacity_utilization);
  if (check.others_can_carry) {
    Record(r.health.Eject(fmt::format("{}; {}", verdict.reason, check.Explain()), now_ns), r);
    return;
  }
  // Kept, with fewer requests: its share of routing falls with its slowness.
  const double weight = std::clamp(1 / std::max(verdict.ratio, 1.0), 0.1, 1.0);
  const bool changed = std::abs(weight - r.slow_weight) > 0.05;
  r.slow_weight = weight;
  if (!changed) return;
  const std::string why = fmt::format("not ejected: {}; only {}; routing weight {:.2f}",
                                      verdict.reason, check.Explain(), weight);
  Log(LogLevel::kWarning, "gateway", "{} {}", r.name, why);
  telemetry.Event("weight", r.name, {{"weight", weight}, {"reason", why}});
}

void Gateway::Impl::UpdateWork(Replica& r) {
  r.watch.SetWork(r.in_flight, r.streaming, r.queued, MonoNowNs());
}

bool Gateway::Impl::OnReplicaProgress(Replica& r, int64_t now_ns, int64_t gap_ns, bool first_byte) {
  if (first_byte) {
    ++r.streaming;
    UpdateWork(r);
  }
  const bool counts = r.watch.OnProgress(now_ns, gap_ns, first_byte);
  if (r.health.state() == ReplicaState::kStalled) {
    // Not from inside the upstream reader: the state change dispatches waiters.
    Replica* replica = &r;
    asio::post(executor, [this, replica, gap_ns] {
      Record(replica->health.OnProgress(
                 fmt::format("a byte of progress after {}", FormatDurationShort(gap_ns))),
             *replica);
    });
  }
  return counts;
}

void Gateway::Impl::StallTick() {
  const int64_t now = MonoNowNs();
  hedge_ttft_p95_ns = fleet_ttft.Quantile(0.95, now, ProgressWatch::kMinSamples);
  for (const auto& rp : replicas) {
    Replica& r = *rp;
    if (r.removed) continue;
    if (r.health.state() == ReplicaState::kReady && config.stall.enabled &&
        r.watch.Stalled(now, config.scrape_interval_ns)) {
      const std::string why = r.watch.Explain(now, config.scrape_interval_ns);
      r.watch.MarkStalled(now);
      Record(r.health.OnStall(why), r);
    }
    if (r.health.state() == ReplicaState::kStalled && r.in_flight == 0 && !r.probing && !stopping) {
      r.probing = true;
      asio::co_spawn(executor, Probe(&r), asio::detached);
    }
  }
  HedgeCheck(now);
}

awaitable<void> Gateway::Impl::Probe(Replica* r) {
  http::OutgoingRequest req;
  req.target = r->url.path + "/v1/completions";
  req.host = r->host_header;
  req.headers = {{"Content-Type", "application/json"}};
  req.body = R"({"prompt":"Hello","max_tokens":1,"temperature":0})";
  const int64_t sent = MonoNowNs();
  Result<http::FetchedResponse> got =
      co_await http::FetchAsync(r->endpoint, req, config.upstream_timeout_ns);
  r->probing = false;
  if (stopping || r->removed) co_return;
  if (got.ok()) {
    // The answer is progress; its wait was the stall's, not a sample (MarkStalled).
    OnReplicaProgress(*r, MonoNowNs(), MonoNowNs() - sent, false);
  } else {
    telemetry.Event("probe_failed", r->name, {{"error", std::string(got.status().message())}});
  }
}

void Gateway::Impl::StartBackground() {
  asio::co_spawn(executor, Every(config.health.interval_ns, &Impl::HealthTick), asio::detached);
  asio::co_spawn(
      executor,
      Every(std::max<int64_t>(config.scrape_interval_ns, 50 * kNsPerMs), &Impl::ScrapeTick),
      asio::detached);
  asio::co_spawn(executor, Every(config.outlier.interval_ns, &Impl::OutlierTick), asio::detached);
  asio::co_spawn(executor, Every(config.stall.check_interval_ns, &Impl::StallTick), asio::detached);
}

void Gateway::Impl::OnProcessEvent(const ReplicaProcessEvent& e) {
  for (const auto& rp : replicas) {
    Replica& r = *rp;
    if (r.launched != e.index) continue;
    telemetry.Event("process_" + e.type, r.name,
                    {{"pid", e.pid}, {"port", e.port}, {"detail", e.detail}});
    if (e.type == "spawned") Record(r.health.OnProcessStart(), r);
    if (e.type == "exited" || e.type == "spawn_failed") Record(r.health.OnProcessExit(e.detail), r);
  }
}

std::vector<ReplicaSnapshot> Gateway::Impl::Snapshot() {
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
    const int64_t now = MonoNowNs();
    s.silence_ms = NsToSeconds(r->watch.SilenceNs(now)) * 1e3;
    s.stall_threshold_ms = NsToSeconds(r->watch.ThresholdNs(now, config.scrape_interval_ns)) * 1e3;
    for (const UpstreamCall* x : r->calls) {
      s.oldest_without_first_byte_ms =
          std::max(s.oldest_without_first_byte_ms, FirstByteWaitMs(*x, now));
    }
    s.weight = r->health.Weight(now) * r->slow_weight;
    out.push_back(s);
  }
  return out;
}

}  // namespace titan::gateway
