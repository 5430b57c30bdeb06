// The relay: one request to a replica and its answer back to the client, streamed as it
// arrives or whole (gateway_impl.h).
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

}  // namespace

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

namespace {

awaitable<void> SendUpstream(std::shared_ptr<UpstreamCall> x, int64_t deadline_ns,
                             int64_t idle_timeout_ns) {
  http::ClientResult r = co_await x->connection->Send(x->request, *x, deadline_ns, idle_timeout_ns);
  x->result = std::move(r);
  x->done = true;
  x->wake.Notify();
}

bool RetryableStatus(int status) { return status >= 500 || status == 429; }

// The upstream answer is complete and nothing will follow it on the client's stream (no
// "upstream failed" event): the relay may end the stream with its last bytes.
bool EndsCleanly(const UpstreamCall& x) {
  return x.done && x.result.ok() && !x.overflow && !x.client_behind && !RetryableStatus(x.status);
}

}  // namespace

void Gateway::Impl::CutCallsForDrain() {
  for (UpstreamCall* x : calls) {
    x->drain_cut = true;
    if (x->connection) x->connection->Close();
    x->wake.Notify();
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

awaitable<Gateway::Impl::Answer> Gateway::Impl::Forward(Replica& r,
                                                        const http::OutgoingRequest& request,
                                                        bool stream, bool can_retry,
                                                        http::Exchange* client,
                                                        const std::string& id) {
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

}  // namespace titan::gateway
