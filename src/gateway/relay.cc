// The relay: one request to the replicas and its answer back to the client, streamed as it
// arrives or whole; hedges and rescues (gateway_impl.h, docs/gateway.md).
//
// A request's attempts race: the first goes to the replica its seat is on; the hedge check
// (HedgeCheck, every stall.check_interval) may add one more on another replica, when a streamed
// request has no first token after the hedge delay (a hedge) or when every replica it waits on
// has stalled (a rescue). An attempt is *committed* when it has something for the client: a
// streamed answer's first token event, a whole answer, or an error answer that is final. Before
// that the client gets nothing (vLLM sends its 200 head at once, so a head is no token); after
// it, the other attempts are closed, which makes their engines free the seats, and the
// committed one is relayed as it arrives. A stream that has begun is never duplicated.
#include <algorithm>

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "src/base/duration.h"
#include "src/base/log.h"
#include "src/base/text.h"
#include "src/gateway/gateway_impl.h"
#include "src/gateway/stream_meter.h"

namespace titan::gateway {

namespace {

constexpr size_t kMaxIdlePerReplica = 256;
constexpr size_t kMaxBufferedAnswer = 64 << 20;  // a whole (non-streamed) answer
constexpr size_t kMaxPendingRelay = 8 << 20;     // bytes a slow client may fall behind
constexpr int64_t kConnectTimeoutNs = 2 * kNsPerSecond;

// Server-sent events end with a blank line; bytes relayed so far that do not (a chunk ended
// mid-event) need one before the gateway appends an event of its own, or the two would merge.
bool EndsAnEvent(std::string_view relayed) {
  return relayed.ends_with("\n\n") || relayed.ends_with("\r\n\r\n");
}

bool RetryableStatus(int status) { return status >= 500 || status == 429; }

}  // namespace

// One attempt of a request at one replica: what the upstream said, shared between the
// coroutine that sends it (RunAttempt) and the relay (Forward).
struct UpstreamCall : http::ResponseObserver {
  UpstreamCall(Gateway::Impl* gateway, std::shared_ptr<Signal> wake, Replica* replica, bool stream)
      : gateway(gateway), wake(std::move(wake)), replica(replica), meter(stream), stream(stream) {}
  Gateway::Impl* gateway;
  std::shared_ptr<Signal> wake;  // the request's: every attempt of it wakes the same relay
  Replica* replica;              // replicas live as long as the loop
  uint64_t epoch = 0;            // the replica's epoch at the send
  const char* hedge = nullptr;   // "delay" or "rescue" for an attempt added by HedgeCheck
  int64_t seat_tokens = 0;       // its seat's share of the replica's token budget
  StreamMeter meter;
  bool stream;
  std::unique_ptr<http::ClientConnection> connection;
  http::OutgoingRequest request;
  int status = 0;
  http::Headers headers;
  bool head = false;
  int64_t head_ns = 0, sent_ns = 0, last_byte_ns = 0;
  int64_t longest_gap_ns = -1;  // between two of its bytes, gaps spanning a stall left out
  bool first_byte = false;
  std::string pending;
  bool discard = false;      // a failed attempt: keep nothing of its body
  bool cancelled = false;    // lost the race (or the client left): closed, no failure of it
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

  void Progress(int64_t now_ns) {
    const bool first = !first_byte;
    first_byte = true;
    const int64_t gap = now_ns - (first ? sent_ns : last_byte_ns);
    if (gateway->OnReplicaProgress(*replica, now_ns, gap, first) && !first) {
      longest_gap_ns = std::max(longest_gap_ns, gap);
    }
    last_byte_ns = now_ns;
  }
  // Something the client can be given: a token, a whole answer, or an answer that is not a
  // stream of tokens (an error status).
  bool HasFirstToken() const { return meter.first_event_ns() > 0; }
  void Close() {
    if (connection) connection->Close();
  }

  void OnHead(int s, const http::Headers& h, int64_t now_ns) override {
    status = s;
    headers = h;
    head = true;
    head_ns = now_ns;
    Progress(now_ns);
    wake->Notify();  // the relay decides what the head means
  }
  bool OnBody(std::string_view data, int64_t now_ns) override {
    if (client_gone || cancelled) return false;
    Progress(now_ns);
    const bool had_token = HasFirstToken();
    meter.OnBody(data, now_ns);
    if (!had_token && HasFirstToken()) wake->Notify();
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
      wake->Notify();
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
        Close();
        break;
    }
    wake->Notify();
  }
};

// One request's attempts (see the top of this file).
struct Race {
  explicit Race(asio::any_io_executor executor) : wake(std::make_shared<Signal>(executor)) {}
  std::shared_ptr<Signal> wake;
  std::vector<std::shared_ptr<UpstreamCall>> live;  // not yet ended, in the order sent
  std::set<int> tried;                              // replicas it went to
  const Gateway::Impl::HedgePolicy* policy = nullptr;
  bool stream = false;
  bool committed = false;
  int hedges = 0;
  // A seat HedgeCheck took for this request, for the relay to send an attempt there.
  Replica* hedge_to = nullptr;
  const char* hedge_reason = nullptr;
  int64_t first_sent_ns = 0;
  std::string id;
};

namespace {

// Sends x->request on an idle connection to its replica or a new one; a kept-alive connection
// that the replica had closed (it fails before any byte) is replaced once by a fresh one, which
// is no failure of the replica.
awaitable<void> RunAttempt(Gateway::Impl* gw, std::shared_ptr<UpstreamCall> x, int64_t timeout_ns,
                           int64_t idle_timeout_ns) {
  Replica& r = *x->replica;
  for (int attempt = 0; attempt < 2 && !x->cancelled && !x->client_gone; ++attempt) {
    x->result = {};
    x->connection = attempt == 0 ? gw->TakeIdle(r) : nullptr;
    const bool fresh = !x->connection;
    if (fresh) {
      x->connection = std::make_unique<http::ClientConnection>(gw->executor);
      http::ClientResult c = co_await x->connection->Connect(r.endpoint, kConnectTimeoutNs);
      if (!c.ok()) {
        x->result = c;  // a failure before the first byte
        break;
      }
    }
    x->sent_ns = MonoNowNs();
    x->result =
        co_await x->connection->Send(x->request, *x, x->sent_ns + timeout_ns, idle_timeout_ns);
    if (!fresh && !x->head && !x->cancelled && !x->client_gone &&
        (x->result.error == http::ClientError::kClosed ||
         x->result.error == http::ClientError::kConnect)) {
      continue;
    }
    break;
  }
  x->done = true;
  x->wake->Notify();
}

// The attempt has something for the client: a whole answer, an error answer (not a stream of
// tokens), or a stream's first token. Failed attempts are taken out before this is asked.
bool Committable(const UpstreamCall& x) {
  if (x.done) return x.result.ok() && !x.overflow;
  if (!x.head) return false;
  if (x.status < 200 || x.status >= 300) return true;
  return x.stream && x.HasFirstToken();
}

// The upstream answer is complete and nothing will follow it on the client's stream (no
// "upstream failed" event): the relay may end the stream with its last bytes.
bool EndsCleanly(const UpstreamCall& x) {
  return x.done && x.result.ok() && !x.overflow && !x.client_behind && !RetryableStatus(x.status);
}

}  // namespace

void Gateway::Impl::CutCallsForDrain() {
  for (UpstreamCall* x : calls) {
    x->drain_cut = true;
    x->Close();
    x->wake->Notify();
  }
}

std::unique_ptr<http::ClientConnection> Gateway::Impl::TakeIdle(Replica& r) {
  while (!r.idle.empty()) {
    auto c = std::move(r.idle.back());
    r.idle.pop_back();
    if (c->is_open()) return c;
  }
  return nullptr;
}

std::shared_ptr<UpstreamCall> Gateway::Impl::StartAttempt(Race& race, Replica& r,
                                                          const http::OutgoingRequest& request,
                                                          int64_t seat_tokens, const char* hedge) {
  auto x = std::make_shared<UpstreamCall>(this, race.wake, &r, race.stream);
  x->epoch = r.health.epoch();
  x->hedge = hedge;
  x->seat_tokens = seat_tokens;
  x->request = request;
  x->request.host = r.host_header;
  if (!x->request.target.starts_with(r.url.path)) {
    x->request.target = r.url.path + x->request.target;
  }
  x->sent_ns = MonoNowNs();
  race.live.push_back(x);
  race.tried.insert(r.index);
  calls.insert(x.get());
  r.calls.insert(x.get());
  asio::co_spawn(executor,
                 RunAttempt(this, x, config.upstream_timeout_ns, config.upstream_idle_timeout_ns),
                 asio::detached);
  return x;
}

double Gateway::Impl::FirstByteWaitMs(const UpstreamCall& x, int64_t now_ns) {
  return x.first_byte ? 0 : NsToSeconds(now_ns - x.sent_ns) * 1e3;
}

void Gateway::Impl::EndAttempt(UpstreamCall& x, bool failed) {
  Replica& r = *x.replica;
  const int64_t now = MonoNowNs();
  if (!x.cancelled && !x.client_gone && !x.drain_cut) {
    IntervalStats& s = r.interval;
    ++s.requests;
    if (failed) {
      ++s.failures;
      r.errors_s->AddCounter(WallNowNs(), 1);
    } else {
      if (x.meter.first_event_ns() > 0 && x.epoch == r.health.epoch()) {
        // Latency numbers count only for requests sent since the replica's last recovery: a
        // stream that waited out a stall says nothing of the replica now.
        const int64_t ttft = x.meter.first_event_ns() - x.sent_ns;
        s.ttft_sum_ns += ttft;
        ++s.ttft_count;
        r.interval_ttfts.push_back(ttft);
        fleet_ttft.Add(ttft, now);
        if (x.meter.events() > 1) {
          s.itl_sum_ns += x.meter.mean_itl_ns();
          ++s.itl_count;
        }
        r.watch.OnAnswerEnd(now, x.longest_gap_ns);
        const double seat_s = NsToSeconds(now - x.sent_ns);
        r.seat_seconds = r.seat_seconds > 0 ? 0.9 * r.seat_seconds + 0.1 * seat_s : seat_s;
      }
      telemetry.completion_tokens->AddCounter(WallNowNs(), x.meter.completion_tokens());
    }
    Record(r.health.OnRequestEnd(!failed, now), r);
  }
  if (x.done && x.result.ok() && x.connection && x.connection->is_open() && !x.client_gone &&
      !x.cancelled && r.idle.size() < kMaxIdlePerReplica && r.health.Routable() && !stopping) {
    r.idle.push_back(std::move(x.connection));
  } else {
    x.Close();
  }
  if (x.first_byte) --r.streaming;
  r.calls.erase(&x);
  calls.erase(&x);
  Release(&r, x.seat_tokens);
}

awaitable<Gateway::Impl::Answer> Gateway::Impl::Forward(
    Replica& r, const http::OutgoingRequest& request, bool stream, bool can_retry,
    http::Exchange* client, const std::string& id, int64_t seat_tokens, const HedgePolicy* hedge) {
  Answer answer;
  if (client && client->client_gone()) {
    // A client that left before its seat came gives the seat up at once.
    ++counters.client_gone;
    answer.client_gone = true;
    Release(&r, seat_tokens);
    co_return answer;
  }
  auto race = std::make_shared<Race>(executor);
  race->stream = stream;
  race->policy = hedge;
  race->id = id;
  race->first_sent_ns = MonoNowNs();
  if (client) {
    // A client that leaves before its answer ends closes every upstream connection of the
    // request (the replicas cancel the work), streamed or not, before or after the first byte.
    std::weak_ptr<Race> weak = race;
    client->OnClientGone([weak] {
      auto race = weak.lock();
      if (!race) return;
      for (auto& x : race->live) {
        x->client_gone = true;
        x->Close();
      }
      race->wake->Notify();
    });
  }
  StartAttempt(*race, r, request, seat_tokens, nullptr);
  if (hedge && hedge->allowed) races.insert(race.get());

  std::shared_ptr<UpstreamCall> winner, last_ended;
  for (;;) {
    if (!winner) {
      if (race->hedge_to) {  // HedgeCheck took a seat for a hedge or a rescue
        Replica& to = *race->hedge_to;
        race->hedge_to = nullptr;
        ++race->hedges;
        answer.hedge = race->hedge_reason;
        StartAttempt(*race, to, request, hedge->seat_tokens, race->hedge_reason);
      }
      for (size_t i = 0; i < race->live.size();) {
        UpstreamCall& x = *race->live[i];
        // A retryable status (5xx, 429) fails the attempt, unless nothing else may answer:
        // then it is the answer, as it was without hedging.
        const bool alone = race->live.size() == 1 && !can_retry;
        if (x.head && !x.discard && RetryableStatus(x.status) && !alone) {
          x.discard = true;
          x.pending.clear();
        }
        if (x.done) {
          const bool ended_by_us = x.cancelled || x.client_gone || x.drain_cut;
          // An answer over the gateway's bound is refused to its client (502) but is no
          // failure of the replica (a large embeddings batch).
          const bool failed = x.discard || (!x.result.ok() && !x.overflow);
          if (ended_by_us || failed || x.overflow) {
            last_ended = race->live[i];
            EndAttempt(x, failed && !ended_by_us);
            race->live.erase(race->live.begin() + static_cast<std::ptrdiff_t>(i));
            continue;
          }
        }
        if (!x.discard && !x.cancelled && Committable(x)) {
          winner = race->live[i];
          break;
        }
        ++i;
      }
      if (winner) {
        race->committed = true;
        races.erase(race.get());
        // The others lose: their connections close, so their engines free the seats.
        for (auto& x : race->live) {
          if (x == winner) continue;
          x->cancelled = true;
          x->Close();
        }
        answer.hedge_won = winner->hedge != nullptr;
        if (answer.hedge_won) telemetry.HedgeWins(winner->hedge)->AddCounter(WallNowNs(), 1);
        if (client && stream) {
          winner->relaying_to = client;
          std::string_view type = http::FindHeader(winner->headers, "Content-Type");
          http::Headers extra = {{"X-Request-Id", id}, {"X-Titan-Replica", winner->replica->name}};
          const std::string content_type(type.empty() ? "text/event-stream" : type);
          // The head leaves with whatever body arrived beside it (one write, not two).
          const std::string first = std::move(winner->pending);
          winner->pending.clear();
          if (!first.empty()) winner->at_event_end = EndsAnEvent(first);
          if (!co_await client->BeginStream(winner->status, content_type, extra, first,
                                            EndsCleanly(*winner))) {
            winner->client_gone = true;
            winner->Close();
          }
        }
        continue;
      }
      if (race->live.empty()) break;  // every attempt ended before one could answer
      co_await race->wake->Wait();
      continue;
    }
    // Losers that ended are accounted as they end.
    for (size_t i = 0; i < race->live.size();) {
      if (race->live[i] != winner && race->live[i]->done) {
        EndAttempt(*race->live[i], false);
        race->live.erase(race->live.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      ++i;
    }
    UpstreamCall& x = *winner;
    if (x.relaying_to && !x.client_gone && (!x.pending.empty() || client->unsent())) {
      std::string chunk = std::move(x.pending);
      x.pending.clear();
      if (!chunk.empty()) x.at_event_end = EndsAnEvent(chunk);
      // The answer's last bytes and the stream's end leave in one write.
      if (!co_await client->Write(chunk, EndsCleanly(x))) {
        x.client_gone = true;
        x.Close();
      }
      continue;
    }
    if (x.done && race->live.size() == 1) break;
    co_await race->wake->Wait();
  }
  races.erase(race.get());

  UpstreamCall& x = winner ? *winner : *last_ended;
  Replica& at = *x.replica;
  answer.replica = &at;
  answer.tried = race->tried;
  answer.client_gone = x.client_gone;
  answer.status = x.status;
  answer.headers = std::move(x.headers);
  answer.sent_ns = x.sent_ns;
  answer.first_ns = x.meter.first_event_ns() ? x.meter.first_event_ns() : x.head_ns;
  const bool transport_ok = x.result.ok() && !x.overflow;
  if (!stream && transport_ok) {
    x.meter.OnWholeBody(x.pending, MonoNowNs());
    answer.first_ns = x.meter.first_event_ns();
  }
  if (x.client_behind) {  // cut off; the replica did its part
    ++counters.client_behind;
    answer.client_behind = true;
    Log(LogLevel::kInfo, "gateway",
        "request {}: the client fell more than {} behind its stream from {}; cut off", id,
        FormatBytes(kMaxPendingRelay), at.name);
  } else if (x.client_gone) {
    ++counters.client_gone;
  } else if (x.drain_cut) {
    answer.drain_cut = true;
    answer.error =
        "the gateway is shutting down and its drain timeout ended before the "
        "replica's answer did; retry";
  } else if (!transport_ok) {
    answer.upstream_failed = true;
    answer.cut_off = x.head;
    answer.error = x.overflow ? fmt::format(
                                    "{} answered more than the gateway's {} bound on "
                                    "a whole answer",
                                    at.name, FormatBytes(kMaxBufferedAnswer))
                              : fmt::format("{}: {}", at.name, x.result.message);
    answer.retry = !winner && can_retry;
  } else if (RetryableStatus(x.status)) {
    answer.upstream_failed = x.status >= 500;
    answer.retry = can_retry && !winner;
    answer.error = fmt::format("{} answered {}", at.name, x.status);
  }
  // The stream broke after bytes went to the client: end it with an error event.
  if (!answer.client_gone && (answer.upstream_failed || answer.drain_cut) && !answer.retry &&
      client && client->streaming()) {
    const std::string error =
        answer.drain_cut
            ? http::JsonError(answer.error, "service_unavailable", 503)
            : http::JsonError(fmt::format("upstream failed mid-stream: {}", answer.error),
                              "upstream_error", 502);
    std::string event = fmt::format("{}data: {}\n\n", x.at_event_end ? "" : "\n\n", error);
    const bool written = co_await client->Write(event);
    (void)written;
  }
  if (!answer.retry) answer.body = std::move(x.pending);
  if (winner) {
    // An answer over the gateway's bound is refused to its client (502) but is no failure of
    // the replica (a large embeddings batch): its health is not touched.
    EndAttempt(x, answer.upstream_failed && !x.overflow);
  }
  if (client) client->OnClientGone(nullptr);
  co_return answer;
}

// ---- hedges and rescues ----

int64_t Gateway::Impl::HedgeDelayNs() const {
  const int64_t p95 = hedge_ttft_p95_ns;
  if (p95 <= 0) return std::max<int64_t>(config.hedging.min_delay_ns, config.stall.initial_ns);
  return std::max<int64_t>(config.hedging.min_delay_ns,
                           static_cast<int64_t>(config.hedging.delay_factor * p95));
}

void Gateway::Impl::HedgeCheck(int64_t now_ns) {
  if (races.empty()) return;
  const HedgingConfig& H = config.hedging;
  const int64_t delay = HedgeDelayNs();
  // Races change as attempts start; walk a copy.
  std::vector<Race*> waiting(races.begin(), races.end());
  for (Race* race : waiting) {
    if (race->committed || race->hedge_to || race->live.empty() || race->hedges >= 2) continue;
    const HedgePolicy& p = *race->policy;
    // A rescue: every replica it waits on has stalled. A hedge: a stream alone past the delay.
    bool all_stalled = true;
    for (auto& x : race->live) {
      all_stalled &= !x->cancelled && x->replica->health.state() == ReplicaState::kStalled;
    }
    const char* reason = nullptr;
    if (H.rescue && all_stalled) {
      reason = "rescue";
    } else if (H.enabled && race->stream && race->live.size() == 1 && race->hedges == 0 &&
               now_ns - race->live[0]->sent_ns > delay && !race->live[0]->HasFirstToken()) {
      reason = "delay";
    }
    if (!reason) continue;
    HedgeBudget& budget = hedge_budgets[p.class_index];
    if (!budget.CanSpend(p.prompt_tokens, now_ns)) {
      telemetry.HedgesRefused("budget")->AddCounter(WallNowNs(), 1);
      continue;
    }
    Ticket t;
    t.pool = p.pool;
    t.tokens = p.seat_tokens;
    t.exclude = race->tried;
    Replica* to = TryPick(t);
    if (!to) {
      telemetry.HedgesRefused("no_seat")->AddCounter(WallNowNs(), 1);
      continue;
    }
    budget.TrySpend(p.prompt_tokens, now_ns);
    race->hedge_to = to;
    race->hedge_reason = reason;
    ++counters.hedges;
    telemetry.Hedges(reason)->AddCounter(WallNowNs(), 1);
    telemetry.hedge_prompt_tokens->AddCounter(WallNowNs(), static_cast<double>(p.prompt_tokens));
    telemetry.Event("hedge", race->live[0]->replica->name,
                    {{"request", race->id},
                     {"reason", reason},
                     {"to", to->name},
                     {"after_s", NsToSeconds(now_ns - race->first_sent_ns)},
                     {"prompt_tokens", p.prompt_tokens}});
    race->wake->Notify();
  }
}

}  // namespace titan::gateway
