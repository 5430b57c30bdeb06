#include "src/serve_sim/server.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/log.h"
#include "src/http/asio_names.h"
#include "src/metrics/exposition.h"
#include "src/metrics/registry.h"
#include "src/serve_sim/tokenizer.h"

namespace titan::serve_sim {
namespace {

namespace asio = boost::asio;
using http::kNoThrow;  // src/http/asio_names.h
constexpr std::string_view kJson = "application/json";
// A wake-up this late still starts the next step at its planned time.
constexpr int64_t kCatchUpNs = kNsPerMs;

const std::vector<std::string> kModelLabel = {"model_name"};
const SignalDesc kRunning{"vllm:num_requests_running",
                          "Number of requests in model execution batches.",
                          SignalKind::kGauge,
                          kModelLabel,
                          {}};
const SignalDesc kWaiting{"vllm:num_requests_waiting",
                          "Number of requests waiting to be processed.",
                          SignalKind::kGauge,
                          kModelLabel,
                          {}};
const SignalDesc kKvUsage{"vllm:kv_cache_usage_perc",
                          "KV-cache usage. 1 means 100 percent usage.",
                          SignalKind::kGauge,
                          kModelLabel,
                          {}};
const SignalDesc kGpuCacheUsage{"vllm:gpu_cache_usage_perc",
                                "GPU KV-cache usage (the older name of vllm:kv_cache_usage_perc).",
                                SignalKind::kGauge,
                                kModelLabel,
                                {}};
const SignalDesc kPromptTokens{"vllm:prompt_tokens_total",
                               "Number of prefill tokens processed.",
                               SignalKind::kCounter,
                               kModelLabel,
                               {}};
const SignalDesc kGenerationTokens{"vllm:generation_tokens_total",
                                   "Number of generation tokens processed.",
                                   SignalKind::kCounter,
                                   kModelLabel,
                                   {}};
const SignalDesc kPreemptions{"vllm:num_preemptions_total",
                              "Cumulative number of preemptions from the engine.",
                              SignalKind::kCounter,
                              kModelLabel,
                              {}};
const SignalDesc kPrefixQueries{"vllm:prefix_cache_queries_total",
                                "Prefix cache queries, in terms of number of queried tokens.",
                                SignalKind::kCounter,
                                kModelLabel,
                                {}};
const SignalDesc kPrefixHits{"vllm:prefix_cache_hits_total",
                             "Prefix cache hits, in terms of number of cached tokens.",
                             SignalKind::kCounter,
                             kModelLabel,
                             {}};
const SignalDesc kSuccess{"vllm:request_success_total",
                          "Count of successfully processed requests.",
                          SignalKind::kCounter,
                          {"model_name", "finished_reason"},
                          {}};
const SignalDesc kTtft{"vllm:time_to_first_token_seconds",
                       "Time to first token of a request, in seconds (one sample per request).",
                       SignalKind::kGauge, kModelLabel, SecondsBuckets()};
const SignalDesc kItl{"vllm:inter_token_latency_seconds",
                      "Time between two decode steps, in seconds (one sample per step).",
                      SignalKind::kGauge, kModelLabel, SecondsBuckets()};
const SignalDesc kE2e{"vllm:e2e_request_latency_seconds",
                      "Arrival to last token of a request, in seconds (one sample per request).",
                      SignalKind::kGauge, kModelLabel, SecondsBuckets()};
const SignalDesc kRefused{"titan_serve_sim_requests_refused_total",
                          "Requests answered 429 because the waiting queue was full.",
                          SignalKind::kCounter,
                          kModelLabel,
                          {}};
const SignalDesc kAborted{"titan_serve_sim_requests_aborted_total",
                          "Requests whose client went away before the end.",
                          SignalKind::kCounter,
                          kModelLabel,
                          {}};
const SignalDesc kInjectedErrors{"titan_serve_sim_injected_errors_total",
                                 "Requests answered 500 by the error_rate fault.",
                                 SignalKind::kCounter,
                                 kModelLabel,
                                 {}};
const SignalDesc kSteps{"titan_serve_sim_steps_total",
                        "Engine steps (forward passes) run.",
                        SignalKind::kCounter,
                        kModelLabel,
                        {}};
const SignalDesc kStalled{"titan_serve_sim_stalled",
                          "1 while the engine is stalled by a fault.",
                          SignalKind::kGauge,
                          kModelLabel,
                          {}};
const SignalDesc kSlow{"titan_serve_sim_slow_factor",
                       "Step cost multiplier of the slow fault (1: normal speed).",
                       SignalKind::kGauge,
                       kModelLabel,
                       {}};

// {"error":{"message":..,"type":..,"param":..,"code":..}}
std::string ErrorBody(std::string_view message, std::string_view type, std::string_view param,
                      int code) {
  nlohmann::json body = {
      {"error",
       {{"message", message},
        {"type", type},
        {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
        {"code", code}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string JsonString(std::string_view text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string_view FinishName(FinishReason reason) {
  return reason == FinishReason::kStop ? "stop" : "length";
}

void AppendUsage(std::string* out, int64_t prompt, int64_t completion) {
  fmt::format_to(std::back_inserter(*out),
                 "\"usage\":{{\"prompt_tokens\":{},\"total_tokens\":{},\"completion_tokens\":{}}}",
                 prompt, prompt + completion, completion);
}

}  // namespace

// One request in flight: what its writer needs and what the driver fills in.
struct Stream : std::enable_shared_from_this<Stream> {
  Stream(ServeSim::Impl* hub, asio::any_io_executor executor)
      : hub(hub), executor(executor), timer(executor) {}
  ~Stream();

  ServeSim::Impl* hub;
  asio::any_io_executor executor;
  asio::steady_timer timer;  // the writer's wake-up: cancelled by the driver
  // Set before the stream is registered; read-only after.
  SeqId id = 0;
  bool registered = false;
  bool streaming = false;
  bool chat = false;
  bool include_usage = false;
  bool embedding = false;
  int64_t prompt_tokens = 0;
  int64_t arrival_mono_ns = 0;
  std::string head;  // streaming: `data: {...,"choices":[{"index":0,` of every chunk
  std::string tail;  // streaming: the id/created/model part, for the usage chunk
  // Guarded by the hub's mutex.
  std::string pending;  // streaming: SSE bytes to send; otherwise the text so far
  int64_t completion_tokens = 0;
  FinishReason finish = FinishReason::kNone;
  bool done = false;
  bool waiting = false;  // the writer sleeps on `timer`
};

struct ServeSim::Impl {
  ServeSimOptions options;
  ParseLimits limits;
  int64_t origin_mono_ns = 0;
  int64_t start_wall_s = 0;

  mutable std::mutex mutex;
  std::unique_ptr<Engine> engine;
  std::unordered_map<SeqId, Stream*> streams;
  bool driver_started = false;
  asio::any_io_executor driver_executor;
  asio::steady_timer* driver_timer = nullptr;  // lives in the driver's frame
  bool driver_idle = false;
  double error_rate = 0;
  std::vector<FaultSpec> error_rate_schedule;  // by time
  size_t next_error_rate = 0;
  uint64_t api_requests = 0;  // ordinal for error_rate draws
  std::atomic<uint64_t> next_response_id{0};
  uint64_t aborted = 0, injected_errors = 0;
  int64_t last_delivery_mono_ns = 0;
  bool last_step_decoded = false;

  MetricRegistry registry{RegistryOptions{0, 0, 1000}};
  Series *running = nullptr, *waiting = nullptr, *kv = nullptr, *gpu_kv = nullptr,
         *prompt_tokens = nullptr, *generation_tokens = nullptr, *preemptions = nullptr,
         *prefix_queries = nullptr, *prefix_hits = nullptr, *success_length = nullptr,
         *success_stop = nullptr, *ttft = nullptr, *itl = nullptr, *e2e = nullptr,
         *refused = nullptr, *aborted_series = nullptr, *injected = nullptr, *steps = nullptr,
         *stalled = nullptr, *slow = nullptr;

  std::unique_ptr<http::Server> http;

  std::thread crash_thread;
  std::mutex crash_mutex;
  std::condition_variable crash_cv;
  bool stopping = false;

  ~Impl() { Shutdown(); }
  void Shutdown() {
    http.reset();  // destroys every coroutine (streams, driver) while the rest is alive
    {
      std::lock_guard<std::mutex> lock(crash_mutex);
      stopping = true;
    }
    crash_cv.notify_all();
    if (crash_thread.joinable()) crash_thread.join();
  }

  int64_t Now() const { return MonoNowNs() - origin_mono_ns; }
  bool Ready() const { return Now() >= options.startup_delay_ns; }

  void CreateSeries();
  void RecordGauges(const EngineStats& stats, int64_t wall_ns);
  std::string RenderMetrics(std::string_view accept);

  // Under `mutex`.
  void Wake(Stream* stream);
  void WakeDriver();
  void EnsureDriver(asio::any_io_executor executor);
  void Deliver(const StepResult& step, int64_t now_mono_ns);
  double CurrentErrorRate();

  asio::awaitable<void> Driver();
  asio::awaitable<void> Handle(http::Exchange& ex);
  asio::awaitable<void> Generate(http::Exchange& ex, bool chat);
  asio::awaitable<void> Embeddings(http::Exchange& ex);
  asio::awaitable<void> HandleAdminFault(http::Exchange& ex);
  // Admits the request into the engine: 0 on success, else the HTTP status it was answered
  // with is to be sent (*body, *headers filled).
  int Admit(const SubmitRequest& request, const std::shared_ptr<Stream>& stream,
            asio::any_io_executor executor, std::string* body, http::Headers* headers);
  // Waits until the engine finished `stream`: true, or false when the client left first (the
  // caller then drops the stream, which aborts its sequence, as vLLM and llama-server cancel
  // a non-streamed request whose client disconnected).
  asio::awaitable<bool> WaitDone(http::Exchange& ex, Stream& stream);
};

Stream::~Stream() {
  std::lock_guard<std::mutex> lock(hub->mutex);
  if (!registered) return;
  hub->streams.erase(id);
  if (hub->engine->Abort(id, hub->Now())) ++hub->aborted;
}

void ServeSim::Impl::CreateSeries() {
  const LabelValues model = {options.model};
  running = registry.GetOrCreate(kRunning, model, 0);
  waiting = registry.GetOrCreate(kWaiting, model, 0);
  kv = registry.GetOrCreate(kKvUsage, model, 0);
  gpu_kv = registry.GetOrCreate(kGpuCacheUsage, model, 0);
  prompt_tokens = registry.GetOrCreate(kPromptTokens, model, 0);
  generation_tokens = registry.GetOrCreate(kGenerationTokens, model, 0);
  preemptions = registry.GetOrCreate(kPreemptions, model, 0);
  prefix_queries = registry.GetOrCreate(kPrefixQueries, model, 0);
  prefix_hits = registry.GetOrCreate(kPrefixHits, model, 0);
  success_length = registry.GetOrCreate(kSuccess, {options.model, "length"}, 0);
  success_stop = registry.GetOrCreate(kSuccess, {options.model, "stop"}, 0);
  ttft = registry.GetOrCreate(kTtft, model, 0);
  itl = registry.GetOrCreate(kItl, model, 0);
  e2e = registry.GetOrCreate(kE2e, model, 0);
  refused = registry.GetOrCreate(kRefused, model, 0);
  aborted_series = registry.GetOrCreate(kAborted, model, 0);
  injected = registry.GetOrCreate(kInjectedErrors, model, 0);
  steps = registry.GetOrCreate(kSteps, model, 0);
  stalled = registry.GetOrCreate(kStalled, model, 0);
  slow = registry.GetOrCreate(kSlow, model, 0);
}

void ServeSim::Impl::RecordGauges(const EngineStats& s, int64_t wall_ns) {
  running->RecordGauge(wall_ns, static_cast<double>(s.running));
  waiting->RecordGauge(wall_ns, static_cast<double>(s.waiting));
  kv->RecordGauge(wall_ns, s.kv_usage());
  gpu_kv->RecordGauge(wall_ns, s.kv_usage());
}

std::string ServeSim::Impl::RenderMetrics(std::string_view accept) {
  EngineStats s;
  uint64_t aborted_now = 0, injected_now = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    s = engine->stats();
    aborted_now = aborted;
    injected_now = injected_errors;
  }
  const int64_t now = WallNowNs();
  RecordGauges(s, now);
  stalled->RecordGauge(now, Now() < s.stall_end_ns ? 1 : 0);
  slow->RecordGauge(now, s.slow_factor);
  prompt_tokens->SetCounter(now, static_cast<double>(s.prompt_tokens));
  generation_tokens->SetCounter(now, static_cast<double>(s.generation_tokens));
  preemptions->SetCounter(now, static_cast<double>(s.preemptions));
  prefix_queries->SetCounter(now, static_cast<double>(s.prefix_queries_tokens));
  prefix_hits->SetCounter(now, static_cast<double>(s.prefix_hits_tokens));
  success_length->SetCounter(now, static_cast<double>(s.finished_length));
  success_stop->SetCounter(now, static_cast<double>(s.finished_stop));
  refused->SetCounter(now, static_cast<double>(s.refused));
  aborted_series->SetCounter(now, static_cast<double>(aborted_now));
  injected->SetCounter(now, static_cast<double>(injected_now));
  steps->SetCounter(now, static_cast<double>(s.steps));
  ExpositionOptions exposition;
  exposition.format = NegotiateFormat(accept);
  exposition.now_ns = now;
  std::string out;
  out.reserve(16 << 10);
  RenderExposition(registry, exposition, &out);
  return out;
}

void ServeSim::Impl::Wake(Stream* stream) {
  if (!stream->waiting) return;
  stream->waiting = false;
  if (stream->executor == driver_executor) {
    stream->timer.cancel();
    return;
  }
  // Another event loop owns the timer: cancel it there. The stream may be gone by then.
  asio::post(stream->executor, [weak = stream->weak_from_this()] {
    if (std::shared_ptr<Stream> alive = weak.lock()) alive->timer.cancel();
  });
}

void ServeSim::Impl::WakeDriver() {
  if (!driver_idle || driver_timer == nullptr) return;
  driver_idle = false;
  asio::steady_timer* timer = driver_timer;
  asio::post(driver_executor, [this, timer] {
    std::lock_guard<std::mutex> lock(mutex);
    if (driver_timer == timer) timer->cancel();
  });
}

void ServeSim::Impl::EnsureDriver(asio::any_io_executor executor) {
  if (driver_started) return;
  driver_started = true;
  driver_executor = executor;
  // Posted: co_spawn may start the coroutine inline, and the caller holds `mutex`.
  asio::post(executor, [this, executor] { asio::co_spawn(executor, Driver(), asio::detached); });
}

void ServeSim::Impl::Deliver(const StepResult& step, int64_t now_mono_ns) {
  const int64_t wall = WallNowNs();
  for (const Emission& emission : step.emissions) {
    auto it = streams.find(emission.id);
    if (it == streams.end()) continue;  // aborted during the step
    Stream* s = it->second;
    if (emission.has_token) {
      const std::string_view word = VocabularyWord(emission.token);
      if (s->completion_tokens == 0) {
        ttft->RecordGauge(wall, NsToSeconds(now_mono_ns - s->arrival_mono_ns));
      }
      if (s->streaming) {
        std::string& out = s->pending;
        out.append(s->head);
        if (s->chat) {
          if (s->completion_tokens == 0)
            out.append("\"delta\":{\"role\":\"assistant\",\"content\":\" ");
          else
            out.append("\"delta\":{\"content\":\" ");
          out.append(word);
          out.append("\"},");
        } else {
          out.append("\"text\":\" ");
          out.append(word);
          out.append("\",");
        }
        if (emission.finish == FinishReason::kNone) {
          out.append("\"logprobs\":null,\"finish_reason\":null}]}\n\n");
        } else {
          out.append("\"logprobs\":null,\"finish_reason\":\"");
          out.append(FinishName(emission.finish));
          out.append("\"}]}\n\n");
        }
      } else {
        s->pending.push_back(' ');
        s->pending.append(word);
      }
      ++s->completion_tokens;
    }
    if (emission.finish != FinishReason::kNone) {
      s->finish = emission.finish;
      s->done = true;
      if (!s->embedding) e2e->RecordGauge(wall, NsToSeconds(now_mono_ns - s->arrival_mono_ns));
      if (s->streaming) {
        if (s->include_usage) {
          s->pending.append(s->tail);
          s->pending.append("\"choices\":[],");
          AppendUsage(&s->pending, s->prompt_tokens, s->completion_tokens);
          s->pending.append("}\n\n");
        }
        s->pending.append("data: [DONE]\n\n");
      }
      s->registered = false;
      streams.erase(it);
      Wake(s);
    } else if (s->streaming) {
      Wake(s);
    }
  }
}

asio::awaitable<void> ServeSim::Impl::Driver() {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  struct Unlink {
    Impl* impl;
    ~Unlink() {
      std::lock_guard<std::mutex> lock(impl->mutex);
      impl->driver_timer = nullptr;
    }
  } unlink{this};
  {
    std::lock_guard<std::mutex> lock(mutex);
    driver_timer = &timer;
  }
  int64_t planned_end = -1;  // engine time at which the last step ended
  for (;;) {
    StepResult step;
    int64_t start = Now();
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (planned_end >= 0 && start - planned_end < kCatchUpNs) start = planned_end;
      step = engine->Step(start);
      if (step.duration_ns == 0) driver_idle = true;
    }
    if (step.duration_ns == 0) {
      planned_end = -1;
      last_step_decoded = false;
      timer.expires_at(asio::steady_timer::time_point::max());
      co_await timer.async_wait(kNoThrow);
      continue;
    }
    planned_end = start + step.duration_ns;
    for (;;) {  // a stall injected meanwhile moves the end
      timer.expires_at(
          asio::steady_timer::time_point(std::chrono::nanoseconds(origin_mono_ns + planned_end)));
      co_await timer.async_wait(kNoThrow);
      std::lock_guard<std::mutex> lock(mutex);
      if (engine->step_end_ns() <= planned_end) break;
      planned_end = engine->step_end_ns();
    }
    if (step.stalled) {
      last_step_decoded = false;
      continue;
    }
    const int64_t mono = MonoNowNs();
    EngineStats stats;
    {
      std::lock_guard<std::mutex> lock(mutex);
      Deliver(step, mono);
      stats = engine->stats();
    }
    const int64_t wall = WallNowNs();
    if (step.decoded > 0 && last_step_decoded) {
      itl->RecordGauge(wall, NsToSeconds(mono - last_delivery_mono_ns));
    }
    last_step_decoded = true;
    last_delivery_mono_ns = mono;
    RecordGauges(stats, wall);
  }
}

double ServeSim::Impl::CurrentErrorRate() {
  const int64_t now = Now();
  while (next_error_rate < error_rate_schedule.size() &&
         error_rate_schedule[next_error_rate].at_ns <= now) {
    error_rate = error_rate_schedule[next_error_rate++].value;
  }
  return error_rate;
}

int ServeSim::Impl::Admit(const SubmitRequest& request, const std::shared_ptr<Stream>& stream,
                          asio::any_io_executor executor, std::string* body,
                          http::Headers* headers) {
  std::lock_guard<std::mutex> lock(mutex);
  const uint64_t ordinal = api_requests++;
  const double rate = CurrentErrorRate();
  if (rate > 0) {
    const uint64_t draw = SplitMix64(options.engine.seed ^ SplitMix64(ordinal + 0xe770));
    if (static_cast<double>(draw >> 11) * 0x1.0p-53 < rate) {
      ++injected_errors;
      *body = ErrorBody(fmt::format("injected fault: internal server error (error_rate {})", rate),
                        "server_error", "", 500);
      return 500;
    }
  }
  Result<SeqId> id = engine->Submit(request, Now());
  if (!id.ok()) {
    if (id.status().code() == StatusCode::kResourceExhausted) {
      *body = ErrorBody(id.status().message(), "rate_limit_error", "", 429);
      headers->push_back({"Retry-After", "1"});
      return 429;
    }
    *body = ErrorBody(id.status().message(), "invalid_request_error", "", 400);
    return 400;
  }
  stream->id = *id;
  stream->registered = true;
  streams.emplace(*id, stream.get());
  EnsureDriver(executor);
  WakeDriver();
  return 0;
}

asio::awaitable<bool> ServeSim::Impl::WaitDone(http::Exchange& ex, Stream& stream) {
  // Runs on this loop, so only while the wait below is suspended.
  ex.OnClientGone([&stream] { stream.timer.cancel(); });
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stream.done || ex.client_gone()) {
        ex.OnClientGone(nullptr);
        co_return stream.done;
      }
      stream.waiting = true;
    }
    stream.timer.expires_at(asio::steady_timer::time_point::max());
    co_await stream.timer.async_wait(kNoThrow);
  }
}

asio::awaitable<void> ServeSim::Impl::Generate(http::Exchange& ex, bool chat) {
  std::string param;
  Result<GenerateRequest> parsed = ParseGenerateRequest(ex.request().body, chat, limits, &param);
  if (!parsed.ok()) {
    std::string body = ErrorBody(parsed.status().message(), "invalid_request_error", param, 400);
    co_await ex.Respond(400, kJson, std::move(body));
    co_return;
  }
  GenerateRequest& req = *parsed;
  auto stream = std::make_shared<Stream>(this, ex.executor());
  stream->streaming = req.stream;
  stream->chat = chat;
  stream->include_usage = req.include_usage;
  stream->prompt_tokens = req.prompt.count;
  stream->arrival_mono_ns = ex.received_ns();
  const std::string model = req.model.empty() ? options.model : req.model;
  const int64_t created = WallNowNs() / kNsPerSecond;
  SubmitRequest submit;
  submit.prompt_tokens = req.prompt.count;
  submit.block_hashes = std::move(req.prompt.block_hashes);
  submit.max_tokens = req.max_tokens;
  submit.ignore_eos = req.ignore_eos;
  submit.seed = req.seed;
  const std::string id = fmt::format(
      "{}-{:016x}", chat ? "chatcmpl" : "cmpl",
      SplitMix64(static_cast<uint64_t>(origin_mono_ns) ^ next_response_id.fetch_add(1)));
  if (req.stream) {  // before Admit: the driver may deliver from another thread at once
    const std::string_view object = chat ? "chat.completion.chunk" : "text_completion";
    stream->tail =
        fmt::format("data: {{\"id\":\"{}\",\"object\":\"{}\",\"created\":{},\"model\":{},", id,
                    object, created, JsonString(model));
    stream->head = stream->tail + "\"choices\":[{\"index\":0,";
  }
  std::string error;
  http::Headers headers;
  const int status = Admit(submit, stream, ex.executor(), &error, &headers);
  if (status != 0) {
    co_await ex.Respond(status, kJson, std::move(error), headers);
    co_return;
  }

  if (!req.stream) {
    if (!co_await WaitDone(ex, *stream)) co_return;
    std::string text;
    int64_t completion = 0;
    FinishReason finish = FinishReason::kLength;
    {
      std::lock_guard<std::mutex> lock(mutex);
      text.swap(stream->pending);
      completion = stream->completion_tokens;
      finish = stream->finish;
    }
    std::string body = fmt::format(
        "{{\"id\":\"{}\",\"object\":\"{}\",\"created\":{},\"model\":{},\"choices\":[{{\"index\":0,",
        id, chat ? "chat.completion" : "text_completion", created, JsonString(model));
    if (chat) {
      fmt::format_to(std::back_inserter(body),
                     "\"message\":{{\"role\":\"assistant\",\"content\":\"{}\"}},", text);
    } else {
      fmt::format_to(std::back_inserter(body), "\"text\":\"{}\",", text);
    }
    fmt::format_to(std::back_inserter(body), "\"logprobs\":null,\"finish_reason\":\"{}\"}}],",
                   FinishName(finish));
    AppendUsage(&body, req.prompt.count, completion);
    body.push_back('}');
    co_await ex.Respond(200, kJson, std::move(body));
    co_return;
  }

  if (!co_await ex.BeginStream(200, "text/event-stream")) co_return;
  std::string out;
  for (;;) {
    bool done = false;
    out.clear();
    {
      std::lock_guard<std::mutex> lock(mutex);
      out.swap(stream->pending);
      done = stream->done;
      if (out.empty() && !done) stream->waiting = true;
    }
    if (!out.empty()) {
      if (!co_await ex.Write(out)) co_return;  // gone: ~Stream aborts the sequence
      continue;
    }
    if (done) break;
    stream->timer.expires_at(asio::steady_timer::time_point::max());
    co_await stream->timer.async_wait(kNoThrow);
  }
  co_await ex.EndStream();
}

asio::awaitable<void> ServeSim::Impl::Embeddings(http::Exchange& ex) {
  std::string param;
  Result<EmbeddingRequest> parsed = ParseEmbeddingRequest(ex.request().body, limits, &param);
  if (parsed.ok() && parsed->total_tokens > options.engine.max_model_len) {
    parsed = InvalidArgumentError(
        fmt::format("the inputs have {} tokens in all, over this model's maximum context length "
                    "of {}: split the request",
                    parsed->total_tokens, options.engine.max_model_len));
    param = "input";
  }
  if (!parsed.ok()) {
    std::string body = ErrorBody(parsed.status().message(), "invalid_request_error", param, 400);
    co_await ex.Respond(400, kJson, std::move(body));
    co_return;
  }
  const EmbeddingRequest& req = *parsed;
  auto stream = std::make_shared<Stream>(this, ex.executor());
  stream->embedding = true;
  stream->prompt_tokens = req.total_tokens;
  stream->arrival_mono_ns = ex.received_ns();
  SubmitRequest submit;
  submit.prompt_tokens = req.total_tokens;
  submit.max_tokens = 0;
  std::string error;
  http::Headers headers;
  const int status = Admit(submit, stream, ex.executor(), &error, &headers);
  if (status != 0) {
    co_await ex.Respond(status, kJson, std::move(error), headers);
    co_return;
  }
  if (!co_await WaitDone(ex, *stream)) co_return;
  const int64_t dim = req.dimensions.value_or(options.embedding_dim);
  std::string body = "{\"object\":\"list\",\"data\":[";
  std::vector<double> vector(static_cast<size_t>(dim));
  for (size_t i = 0; i < req.input_hashes.size(); ++i) {
    uint64_t state = req.input_hashes[i] ^ SplitMix64(options.engine.seed);
    double norm = 0;
    for (double& v : vector) {
      state += 0x9e3779b97f4a7c15ULL;
      v = static_cast<double>(SplitMix64(state) >> 11) * 0x1.0p-52 - 1.0;  // [-1, 1)
      norm += v * v;
    }
    norm = std::sqrt(norm);
    if (i > 0) body.push_back(',');
    fmt::format_to(std::back_inserter(body),
                   "{{\"object\":\"embedding\",\"index\":{},\"embedding\":[", i);
    for (size_t d = 0; d < vector.size(); ++d) {
      if (d > 0) body.push_back(',');
      fmt::format_to(std::back_inserter(body), "{:.6g}", norm > 0 ? vector[d] / norm : 0.0);
    }
    body.append("]}");
  }
  fmt::format_to(std::back_inserter(body),
                 "],\"model\":{},\"usage\":{{\"prompt_tokens\":{},\"total_tokens\":{}}}}}",
                 JsonString(req.model.empty() ? options.model : req.model), req.total_tokens,
                 req.total_tokens);
  co_await ex.Respond(200, kJson, std::move(body));
}

asio::awaitable<void> ServeSim::Impl::HandleAdminFault(http::Exchange& ex) {
  if (!options.admin) {
    std::string body = ErrorBody(
        "the admin endpoint is off: start serve-sim with --admin on (it is on by default only "
        "on loopback)",
        "permission_error", "", 403);
    co_await ex.Respond(403, kJson, std::move(body));
    co_return;
  }
  std::string param;
  Result<AdminFault> fault = ParseAdminFault(ex.request().body, &param);
  if (!fault.ok()) {
    std::string body = ErrorBody(fault.status().message(), "invalid_request_error", param, 400);
    co_await ex.Respond(400, kJson, std::move(body));
    co_return;
  }
  nlohmann::json applied = nlohmann::json::object();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (fault->stall_ns) {
      engine->InjectStall(Now(), *fault->stall_ns);
      applied["stall"] = FormatDuration(*fault->stall_ns);
    }
    if (fault->slow) {
      engine->SetSlowFactor(*fault->slow);
      applied["slow"] = *fault->slow;
    }
    if (fault->error_rate) {
      CurrentErrorRate();  // apply what is due, so the override is the latest
      error_rate = *fault->error_rate;
      applied["error_rate"] = *fault->error_rate;
    }
    if (fault->crash) applied["crash"] = true;
  }
  Log(LogLevel::kInfo, "serve-sim", "admin fault: {}", applied.dump());
  std::string body = nlohmann::json{{"applied", applied}}.dump();
  co_await ex.Respond(200, kJson, std::move(body));
  if (fault->crash) {
    Log(LogLevel::kWarning, "serve-sim", "crashing now (admin fault)");
    raise(SIGKILL);
  }
}

asio::awaitable<void> ServeSim::Impl::Handle(http::Exchange& ex) {
  const http::Request& request = ex.request();
  const std::string_view path = request.path();
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";
  struct Route {
    std::string_view path;
    bool post;
    bool needs_ready;
  };
  static constexpr Route kRoutes[] = {
      {"/v1/completions", true, true}, {"/v1/chat/completions", true, true},
      {"/v1/embeddings", true, true},  {"/tokenize", true, true},
      {"/admin/fault", true, false},   {"/health", false, true},
      {"/v1/models", false, true},     {"/metrics", false, false},
      {"/version", false, false},
  };
  const Route* route = nullptr;
  for (const Route& r : kRoutes) {
    if (r.path == path) route = &r;
  }
  if (route == nullptr) {
    std::string body = ErrorBody(
        fmt::format("no endpoint {}; serve-sim has /v1/completions, /v1/chat/completions, "
                    "/v1/embeddings, /v1/models, /tokenize, /health, /metrics, /version",
                    path),
        "not_found_error", "", 404);
    co_await ex.Respond(404, kJson, std::move(body));
    co_return;
  }
  if ((route->post && !post) || (!route->post && !get)) {
    std::string body = ErrorBody(fmt::format("{} takes {}", path, route->post ? "POST" : "GET"),
                                 "invalid_request_error", "", 405);
    http::Headers allow = {{"Allow", route->post ? "POST" : "GET"}};
    co_await ex.Respond(405, kJson, std::move(body), allow);
    co_return;
  }
  if (route->needs_ready && !Ready()) {
    std::string body = ErrorBody("the model is still loading (startup delay); retry shortly",
                                 "service_unavailable", "", 503);
    http::Headers retry = {{"Retry-After", "1"}};
    co_await ex.Respond(503, kJson, std::move(body), retry);
    co_return;
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions") {
    co_await Generate(ex, path == "/v1/chat/completions");
  } else if (path == "/v1/embeddings") {
    co_await Embeddings(ex);
  } else if (path == "/tokenize") {
    std::string param;
    Result<std::string> text = ParseTokenizeRequest(request.body, limits, &param);
    if (!text.ok()) {
      std::string body = ErrorBody(text.status().message(), "invalid_request_error", param, 400);
      co_await ex.Respond(400, kJson, std::move(body));
      co_return;
    }
    const std::vector<uint32_t> ids = TokenIds(*text);
    std::string body = fmt::format("{{\"count\":{},\"max_model_len\":{},\"tokens\":[{}]}}",
                                   ids.size(), options.engine.max_model_len, fmt::join(ids, ","));
    co_await ex.Respond(200, kJson, std::move(body));
  } else if (path == "/admin/fault") {
    co_await HandleAdminFault(ex);
  } else if (path == "/health") {
    std::string body = "{\"status\":\"ok\"}";
    co_await ex.Respond(200, kJson, std::move(body));
  } else if (path == "/v1/models") {
    std::string body = fmt::format(
        "{{\"object\":\"list\",\"data\":[{{\"id\":{0},\"object\":\"model\",\"created\":{1},"
        "\"owned_by\":\"titan-serve-sim\",\"root\":{0},\"max_model_len\":{2}}}]}}",
        JsonString(options.model), start_wall_s, options.engine.max_model_len);
    co_await ex.Respond(200, kJson, std::move(body));
  } else if (path == "/metrics") {
    std::string body = RenderMetrics(http::FindHeader(request.headers, "Accept"));
    const std::string_view type =
        ContentType(NegotiateFormat(http::FindHeader(request.headers, "Accept")));
    co_await ex.Respond(200, type, std::move(body));
  } else {  // /version
    std::string body = "{\"version\":\"titan-serve-sim\"}";
    co_await ex.Respond(200, kJson, std::move(body));
  }
}

ServeSim::ServeSim(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ServeSim::~ServeSim() { Stop(); }

int ServeSim::port() const { return impl_->http ? impl_->http->port() : 0; }

void ServeSim::Stop() {
  if (impl_) impl_->Shutdown();
}

EngineStats ServeSim::engine_stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->engine->stats();
}

Result<std::unique_ptr<ServeSim>> ServeSim::Start(ServeSimOptions options) {
  if (options.model.empty()) return InvalidArgumentError("--model must not be empty");
  if (options.embedding_dim < 1 || options.embedding_dim > 65536) {
    return InvalidArgumentError("--embedding-dim must be in [1, 65536]");
  }
  if (options.default_max_tokens < 1 || options.max_tokens_limit < 1 ||
      options.default_max_tokens > options.max_tokens_limit) {
    return InvalidArgumentError(
        "--default-max-tokens must be in [1, --max-tokens-limit] and --max-tokens-limit >= 1");
  }
  if (!(options.error_rate >= 0 && options.error_rate <= 1)) {
    return InvalidArgumentError("the error rate must be in [0, 1]");
  }
  if (options.startup_delay_ns < 0) return InvalidArgumentError("--startup-delay is negative");
  auto impl = std::make_unique<Impl>();
  std::vector<FaultSpec> crashes;
  for (const FaultSpec& fault : options.faults) {
    switch (fault.kind) {
      case FaultSpec::Kind::kStall:
        options.engine.faults.push_back(
            {TimedFault::Kind::kStall, fault.at_ns, fault.duration_ns, 1});
        break;
      case FaultSpec::Kind::kSlow:
        options.engine.faults.push_back({TimedFault::Kind::kSlow, fault.at_ns, 0, fault.value});
        break;
      case FaultSpec::Kind::kErrorRate:
        impl->error_rate_schedule.push_back(fault);
        break;
      case FaultSpec::Kind::kCrash:
        crashes.push_back(fault);
        break;
    }
  }
  TITAN_RETURN_IF_ERROR(options.engine.Validate());
  std::stable_sort(impl->error_rate_schedule.begin(), impl->error_rate_schedule.end(),
                   [](const FaultSpec& a, const FaultSpec& b) { return a.at_ns < b.at_ns; });
  impl->options = options;
  impl->error_rate = options.error_rate;
  impl->limits.max_model_len = options.engine.max_model_len;
  impl->limits.max_tokens_limit = options.max_tokens_limit;
  impl->limits.default_max_tokens = options.default_max_tokens;
  impl->limits.block_tokens = options.engine.block_tokens;
  impl->engine = std::make_unique<Engine>(options.engine);
  impl->CreateSeries();
  impl->origin_mono_ns = MonoNowNs();
  impl->start_wall_s = WallNowNs() / kNsPerSecond;
  Impl* raw = impl.get();
  auto server =
      http::Server::Start(options.http, [raw](http::Exchange& ex) { return raw->Handle(ex); });
  if (!server.ok()) return server.status();
  impl->http = std::move(server).value();
  if (!crashes.empty()) {
    int64_t at = crashes.front().at_ns;
    for (const FaultSpec& c : crashes) at = std::min(at, c.at_ns);
    const int64_t deadline = raw->origin_mono_ns + at;
    impl->crash_thread = std::thread([raw, deadline] {
      std::unique_lock<std::mutex> lock(raw->crash_mutex);
      const auto until = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline));
      if (raw->crash_cv.wait_until(lock, until, [raw] { return raw->stopping; })) return;
      LogLine(LogLevel::kWarning, "serve-sim", "crashing now (--fault crash)");
      raise(SIGKILL);
    });
  }
  return std::unique_ptr<ServeSim>(new ServeSim(std::move(impl)));
}

}  // namespace titan::serve_sim
