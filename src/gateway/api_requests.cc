// One API request from inspection to its answer: limits, class, tenant, deadline, affinity key,
// admission, retries, the access log; and plain proxying of the paths the gateway does not
// inspect (gateway_impl.h).
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/duration.h"
#include "src/base/log.h"
#include "src/base/text.h"
#include "src/gateway/batch_codec.h"
#include "src/gateway/gateway_impl.h"

namespace titan::gateway {

namespace {

std::string BearerKey(std::string_view authorization) {
  if (authorization.size() > 7 && http::EqualsIgnoreCase(authorization.substr(0, 7), "bearer ")) {
    return std::string(authorization.substr(7));
  }
  return std::string(authorization);
}

}  // namespace

awaitable<void> Gateway::Impl::RespondError(http::Exchange& ex, Context& c, int status,
                                            std::string_view type, const std::string& message,
                                            const http::Headers& headers) {
  c.status = status;
  http::Headers extra = headers;
  extra.push_back({"X-Request-Id", c.request_id});
  std::string body = http::JsonError(message, type, status);
  co_await ex.Respond(status, "application/json", std::move(body), extra);
}

void Gateway::Impl::LeftWhileQueued(Context& c) {
  ++counters.client_gone;
  c.status = 499;
  c.reason = "client_gone";
}

awaitable<void> Gateway::Impl::Reject(http::Exchange& ex, Context& c, Shed shed,
                                      int64_t retry_after_s) {
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

awaitable<void> Gateway::Impl::RejectLimit(http::Exchange& ex, Context& c,
                                           const std::string& message) {
  c.reason = "limit";
  ++counters.invalid;
  telemetry.Rejections("limit")->AddCounter(WallNowNs(), 1);
  co_await RespondError(ex, c, 400, "invalid_request_error", message, kNoHeaders);
}

awaitable<void> Gateway::Impl::HandleApi(http::Exchange& ex, Endpoint endpoint) {
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

awaitable<void> Gateway::Impl::ServeApi(http::Exchange& ex, Context& c) {
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
    if (!ParseInt64(deadline_text, &deadline_ms) || deadline_ms <= 0 || deadline_ms > 86'400'000) {
      const std::string why = fmt::format(
          "header {}: '{}' is not a deadline in "
          "milliseconds (1..86400000)",
          A.deadline_header, deadline_text);
      co_await RejectLimit(ex, c, why);
      co_return;
    }
  }
  // A class without a deadline of its own queues no longer than the TTFT objective: a request
  // that would wait past it would miss it anyway, and shedding it (429 + Retry-After) keeps the
  // queue short for the requests that can still make it.
  const PriorityClass& klass = A.classes[c.ticket.class_index];
  const int64_t class_deadline = klass.deadline_ns > 0 ? klass.deadline_ns : config.ttft_slo_ns;
  if (deadline_ms > 0) {
    c.ticket.deadline_ns = c.arrival_ns + deadline_ms * kNsPerMs;
  } else if (class_deadline > 0) {
    c.ticket.deadline_ns = c.arrival_ns + class_deadline;
  }
  ++pool_load[c.ticket.pool].arrivals;
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
  HedgePolicy hedge;
  hedge.allowed = (config.hedging.enabled || config.hedging.rescue) && klass.hedge;
  hedge.class_index = c.ticket.class_index;
  hedge.pool = c.ticket.pool;
  hedge.prompt_tokens = prompt_tokens;
  hedge.seat_tokens = c.ticket.tokens;
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
      telemetry.prompt_tokens->AddCounter(WallNowNs(), static_cast<double>(prompt_tokens));
      hedge_budgets[c.ticket.class_index].Earn(prompt_tokens, seat_ns);
    }
    const bool can_retry = attempt < config.retries;
    Answer a = co_await Forward(*r, up, c.info.stream, can_retry, &ex, c.request_id,
                                c.ticket.tokens, &hedge);
    c.replica = a.replica ? a.replica->name : r->name;
    if (a.sent_ns > 0) c.sent_wall_ns = WallNowNs() - (MonoNowNs() - a.sent_ns);
    if (a.hedge) c.hedge = a.hedge;
    c.hedge_won |= a.hedge_won;
    if (!a.client_gone) {  // a request cut short says nothing of the service time
      mean_service_ns = 0.9 * mean_service_ns + 0.1 * static_cast<double>(MonoNowNs() - seat_ns);
    }
    if (a.retry && can_retry) {
      ++counters.retries;
      ++c.retries;
      telemetry.retries->AddCounter(WallNowNs(), 1);
      telemetry.Event("retry", c.replica, {{"request", c.request_id}, {"error", a.error}});
      c.ticket.exclude.insert(a.tried.begin(), a.tried.end());
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
    http::Headers extra = {{"X-Request-Id", c.request_id}, {"X-Titan-Replica", c.replica}};
    const std::string content_type(type.empty() ? "application/json" : type);
    co_await ex.Respond(a.status, content_type, std::move(a.body), extra);
    co_return;
  }
}

awaitable<void> Gateway::Impl::HandlePlain(http::Exchange& ex) {
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
  Answer a = co_await Forward(*r, up, false, false, &ex, c.request_id, 0, nullptr);
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

void Gateway::Impl::WriteAccessLog(const Context& c) {
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
  if (c.sent_wall_ns > 0) line["sent_time_ns"] = c.sent_wall_ns;
  if (c.hedge) {
    line["hedge"] = c.hedge;
    line["hedge_won"] = c.hedge_won;
  }
  if (!c.reason.empty()) line["reason"] = c.reason;
  std::string text = line.dump();
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), access_log);
}

}  // namespace titan::gateway
