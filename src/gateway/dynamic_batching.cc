// Dynamic batching: compatible embeddings and non-streamed completions queued for up to
// batching.max_queue_delay go upstream as one request and are split back (gateway_impl.h).
#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "src/gateway/batch_codec.h"
#include "src/gateway/gateway_impl.h"

namespace titan::gateway {

void Gateway::Impl::FinishBatch(Batch& batch, int status, const std::string& body) {
  for (Member* m : batch.members) {
    m->status = status;
    m->answer = body;
    m->wake->Notify();
  }
}

awaitable<void> Gateway::Impl::ServeBatched(http::Exchange& ex, Context& c,
                                            const std::string& key) {
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

awaitable<void> Gateway::Impl::FlushAfter(std::string key, uint64_t generation) {
  asio::steady_timer timer(executor, std::chrono::nanoseconds(config.batching.max_queue_delay_ns));
  co_await timer.async_wait(kNoThrow);
  auto it = batches.find(key);
  if (it != batches.end() && it->second.generation == generation) Flush(key);
}

void Gateway::Impl::Flush(const std::string& key) {
  auto it = batches.find(key);
  if (it == batches.end()) return;
  Batch batch = std::move(it->second);
  batches.erase(it);
  asio::co_spawn(executor, RunBatch(std::move(batch)), asio::detached);
}

awaitable<void> Gateway::Impl::RunBatch(Batch batch) {
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
    FinishBatch(batch, 500, http::JsonError(merged.status().message(), "server_error", 500));
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
      FinishBatch(batch, status,
                  http::JsonError(fmt::format("batch refused: {}", ShedName(t.shed)),
                                  "rate_limited", status));
      co_return;
    }
    counters.admitted += attempt == 0 ? batch.members.size() : 0;
    const int64_t seat_ns = MonoNowNs();
    const bool can_retry = attempt < config.retries;
    Answer a = co_await Forward(*r, up, false, can_retry, nullptr, kNoId, t.tokens, nullptr);
    mean_service_ns = 0.9 * mean_service_ns + 0.1 * static_cast<double>(MonoNowNs() - seat_ns);
    if (a.retry && can_retry) {
      ++counters.retries;
      telemetry.retries->AddCounter(WallNowNs(), 1);
      telemetry.Event("retry", r->name, {{"batch", batch.members.size()}, {"error", a.error}});
      t.exclude.insert(a.tried.begin(), a.tried.end());
      t.assigned = nullptr;
      continue;
    }
    if (a.status != 200 || !a.answered()) {
      FinishBatch(batch, a.answered() ? a.status : 502,
                  a.answered() ? a.body
                               : http::JsonError(fmt::format("the replica failed: {}", a.error),
                                                 "upstream_error", 502));
      co_return;
    }
    Result<std::vector<std::string>> parts = SplitResponse(batch.endpoint, a.body, prompt_bytes);
    if (!parts.ok() || parts->size() != batch.members.size()) {
      r->errors_s->AddCounter(WallNowNs(), 1);
      FinishBatch(batch, 502,
                  http::JsonError(fmt::format("the replica's batch answer is unusable: {}",
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

}  // namespace titan::gateway
