#include "src/load/runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <future>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/http/asio_names.h"
#include "src/http/sse.h"
#include "src/metrics/text_parse.h"

namespace titan::load {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

using http::kNoThrow;                       // src/http/asio_names.h
constexpr size_t kMaxBodyBytes = 64 << 20;  // a non-streamed answer larger than this is cut
constexpr size_t kMaxScrapeBytes = 16 << 20;
constexpr size_t kMaxScrapeSeries = 1000;

std::chrono::steady_clock::time_point AtMono(int64_t mono_ns) {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(mono_ns));
}

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

RequestError ErrorOf(http::ClientError error) {
  switch (error) {
    case http::ClientError::kNone:
      return RequestError::kNone;
    case http::ClientError::kConnect:
      return RequestError::kConnect;
    case http::ClientError::kTimeout:
      return RequestError::kTimeout;
    case http::ClientError::kClosed:
      return RequestError::kClosed;
    case http::ClientError::kMalformed:
      return RequestError::kMalformedHttp;
    case http::ClientError::kAborted:
      return RequestError::kMalformedEvent;
  }
  return RequestError::kClosed;
}

// Shared by every loop of a run.
struct Shared {
  const RunnerOptions& options;
  int64_t start_mono_ns = 0;
  tcp::endpoint endpoint;
  std::optional<tcp::endpoint> scrape_endpoint;
  std::atomic<uint64_t> dispatched{0}, done{0}, errors{0}, in_flight{0}, slo_misses{0};
  // Request coroutines and closed-loop users still running; the run ends when it is 0.
  std::atomic<uint64_t> outstanding{0};
  std::atomic<uint64_t> stale_retries{0};  // resent after a kept-alive connection was closed
  std::atomic<bool> stop{false};           // no new sends (answers in flight may still end)
  std::atomic<bool> run_over{false};       // the run has ended: scraping stops too
  std::mutex recent_mutex;                 // guards the two histograms of the last second
  LatencyHistogram recent_ttft;
  LatencyHistogram recent_lag;
  std::atomic<size_t> itl_bytes{0};

  explicit Shared(const RunnerOptions& o) : options(o) {}
  int64_t Now() const { return MonoNowNs() - start_mono_ns; }
};

// One event loop: its connections, its records, its request coroutines.
class Loop {
 public:
  Loop(Shared* shared, uint64_t concurrency_cap) : shared_(shared), cap_(concurrency_cap) {}

  asio::io_context& context() { return context_; }
  std::vector<RequestRecord>& records() { return records_; }
  std::vector<int64_t>& itl() { return itl_; }
  LatencyHistogram& itl_histogram() { return itl_histogram_; }
  bool itl_truncated() const { return itl_truncated_; }
  // Records of requests whose answer had not ended when the run stopped (their coroutines are
  // suspended; valid until the loop is destroyed).
  std::vector<const RequestRecord*> Unfinished() const {
    std::vector<const RequestRecord*> out;
    for (const auto& [index, record] : in_flight_) out.push_back(record);
    return out;
  }

  // Starts request `index` now (on this loop's thread). The caller counted it in
  // Shared::outstanding.
  void Dispatch(uint64_t index, WorkItem item) {
    asio::co_spawn(context_, Request(index, std::move(item)), asio::detached);
  }
  // Runs one closed-loop user until `deadline_ns` (offset), taking work from `next`.
  asio::awaitable<void> User(std::function<std::optional<std::pair<uint64_t, WorkItem>>()> next,
                             int64_t deadline_ns);
  asio::awaitable<RequestRecord> Execute(uint64_t index, WorkItem item);
  // Opens `count` connections into the idle pool; returns how many opened.
  asio::awaitable<uint64_t> Warm(uint64_t count) {
    uint64_t opened = 0;
    for (uint64_t i = 0; i < count; ++i) {
      auto connection = std::make_unique<http::ClientConnection>(context_.get_executor());
      http::ClientResult r =
          co_await connection->Connect(shared_->endpoint, shared_->options.connect_timeout_ns);
      if (!r.ok()) break;  // the run will show the server's state; do not wait here
      idle_.push_back(std::move(connection));
      ++opened;
    }
    co_return opened;
  }

 private:
  asio::awaitable<void> Request(uint64_t index, WorkItem item) {
    RequestRecord record = co_await Execute(index, std::move(item));
    records_.push_back(record);
    shared_->outstanding.fetch_sub(1, std::memory_order_relaxed);
  }
  asio::awaitable<void> AcquireSlot();
  void ReleaseSlot();
  void Finish(RequestRecord& record);

  Shared* shared_;
  asio::io_context context_{1};
  std::vector<std::unique_ptr<http::ClientConnection>> idle_;
  std::vector<RequestRecord> records_;
  std::vector<int64_t> itl_;
  LatencyHistogram itl_histogram_;
  bool itl_truncated_ = false;
  std::unordered_map<uint64_t, RequestRecord*> in_flight_;
  // --max-concurrency
  uint64_t cap_;
  uint64_t active_ = 0;
  std::deque<asio::steady_timer*> waiters_;
  ResponseParser parser_;
};

asio::awaitable<void> Loop::AcquireSlot() {
  if (cap_ == 0) co_return;
  if (active_ < cap_ && waiters_.empty()) {
    ++active_;
    co_return;
  }
  asio::steady_timer wake(context_, asio::steady_timer::time_point::max());
  waiters_.push_back(&wake);
  co_await wake.async_wait(kNoThrow);  // cancelled by ReleaseSlot, which hands us the slot
}

void Loop::ReleaseSlot() {
  if (cap_ == 0) return;
  if (!waiters_.empty()) {
    asio::steady_timer* next = waiters_.front();
    waiters_.pop_front();
    next->cancel();  // the slot passes to the waiter: active_ unchanged
  } else {
    --active_;
  }
}

void Loop::Finish(RequestRecord& record) {
  shared_->done.fetch_add(1, std::memory_order_relaxed);
  if (!record.ok()) shared_->errors.fetch_add(1, std::memory_order_relaxed);
  if (shared_->options.misses_slo && shared_->options.misses_slo(record)) {
    shared_->slo_misses.fetch_add(1, std::memory_order_relaxed);
  }
  if (record.ok() && record.first_token_ns != kNever) {
    std::lock_guard<std::mutex> lock(shared_->recent_mutex);
    shared_->recent_ttft.Record(record.first_token_ns - record.planned_ns);
  }
}

// Collects what arrives for one request.
class ResponseCollector : public http::ResponseObserver {
 public:
  ResponseCollector(RequestRecord* record, Api api, bool streamed, ResponseParser* parser,
                    Shared* shared)
      : record_(record), api_(api), streamed_(streamed), parser_(parser), shared_(shared) {}

  void OnHead(int status, const http::Headers& headers, int64_t now_ns) override {
    record_->first_byte_ns = now_ns - shared_->start_mono_ns;
    record_->http_status = static_cast<int16_t>(status);
    std::string_view type = http::FindHeader(headers, "content-type");
    sse_ =
        streamed_ && status / 100 == 2 && type.find("text/event-stream") != std::string_view::npos;
  }

  bool OnBody(std::string_view data, int64_t now_ns) override {
    if (!sse_) {
      if (body_.size() + data.size() > kMaxBodyBytes) return false;
      body_.append(data);
      return true;
    }
    const int64_t t = now_ns - shared_->start_mono_ns;
    Status status = sse_parser_.Feed(data, [&](const http::SseEvent& event) {
      if (!event_error_.ok()) return;
      if (event.data == "[DONE]") {
        done_ = true;
        return;
      }
      ResponseInfo info;
      Status parsed = parser_->Parse(event.data, api_, &info);
      if (!parsed.ok()) {
        event_error_ = parsed;
        return;
      }
      Absorb(info);
      if (info.has_content) {
        ++record_->content_chunks;
        if (record_->first_token_ns == kNever) {
          record_->first_token_ns = t;
        } else {
          gaps_.push_back(t - record_->last_token_ns);
        }
        record_->last_token_ns = t;
      }
    });
    if (!status.ok()) event_error_ = status;
    return event_error_.ok();
  }

  // Called once the collector ended without a transport error; classifies the answer.
  void Complete(int64_t end_ns) {
    if (record_->http_status / 100 != 2) {
      record_->error = record_->http_status == 429   ? RequestError::kHttp429
                       : record_->http_status >= 500 ? RequestError::kHttp5xx
                                                     : RequestError::kHttp4xx;
      return;
    }
    if (sse_) {
      if (!event_error_.ok()) {
        record_->error = RequestError::kMalformedEvent;
      } else if (!done_) {
        record_->error = RequestError::kStreamCut;
      }
    } else {
      ResponseInfo info;
      if (!parser_->Parse(body_, api_, &info).ok()) {
        record_->error = RequestError::kMalformedBody;
        return;
      }
      Absorb(info);
      if (info.has_content || api_ == Api::kEmbeddings) {
        record_->first_token_ns = end_ns;
        record_->last_token_ns = end_ns;
      }
    }
  }

  // Sets the record's token counts: the server's usage when it sent one, else the counted
  // content chunks of a stream (a lower bound), else the planned counts stay.
  void AttributeTokens() {
    if (usage_prompt_ >= 0 || usage_completion_ >= 0) {
      record_->tokens_from = TokenSource::kUsage;
      if (usage_prompt_ >= 0) record_->prompt_tokens = usage_prompt_;
      record_->output_tokens = usage_completion_ >= 0 ? usage_completion_ : record_->content_chunks;
    } else if (sse_) {
      record_->tokens_from = TokenSource::kChunks;
      record_->output_tokens = record_->content_chunks;
    }
  }

  std::vector<int64_t>& gaps() { return gaps_; }

 private:
  void Absorb(const ResponseInfo& info) {
    if (info.prompt_tokens >= 0) usage_prompt_ = info.prompt_tokens;
    if (info.completion_tokens >= 0) usage_completion_ = info.completion_tokens;
    if (info.server_prompt_ms >= 0) record_->server_prompt_ms = info.server_prompt_ms;
    if (info.server_predicted_ms >= 0) record_->server_predicted_ms = info.server_predicted_ms;
    if (info.server_predicted_per_token_ms >= 0) {
      record_->server_predicted_per_token_ms = info.server_predicted_per_token_ms;
    }
    if (info.server_cache_tokens >= 0) record_->server_cache_tokens = info.server_cache_tokens;
  }

  int64_t usage_prompt_ = -1;
  int64_t usage_completion_ = -1;
  RequestRecord* record_;
  Api api_;
  bool streamed_;
  ResponseParser* parser_;
  Shared* shared_;
  bool sse_ = false;
  bool done_ = false;
  Status event_error_;
  http::SseParser sse_parser_;
  std::string body_;
  std::vector<int64_t> gaps_;
};

asio::awaitable<RequestRecord> Loop::Execute(uint64_t index, WorkItem item) {
  const RunnerOptions& options = shared_->options;
  RequestRecord record;
  record.index = index;
  record.planned_ns = item.planned_ns;
  record.dispatched_ns = shared_->Now();
  record.planned_prompt_tokens = item.prompt_tokens;
  record.planned_output_tokens = item.output_tokens;
  record.prompt_tokens = item.prompt_tokens;
  record.output_tokens = 0;
  record.group = item.group;
  {
    std::lock_guard<std::mutex> lock(shared_->recent_mutex);
    shared_->recent_lag.Record(record.dispatched_ns - record.planned_ns);
  }
  shared_->in_flight.fetch_add(1, std::memory_order_relaxed);
  in_flight_.emplace(index, &record);
  co_await AcquireSlot();
  record.slot_ns = shared_->Now();

  std::unique_ptr<http::ClientConnection> connection;
  while (!idle_.empty() && !connection) {
    connection = std::move(idle_.back());
    idle_.pop_back();
    if (!connection->is_open()) connection.reset();
  }
  http::ClientResult result;
  const bool reused = connection != nullptr;
  if (!connection) {
    connection = std::make_unique<http::ClientConnection>(context_.get_executor());
    result = co_await connection->Connect(shared_->endpoint, options.connect_timeout_ns);
  }
  const bool streamed = options.api.stream && options.api.api != Api::kEmbeddings;
  ResponseCollector collector(&record, options.api.api, streamed, &parser_, shared_);
  if (result.ok()) {
    http::OutgoingRequest request;
    request.method = "POST";
    request.target = options.url.path + std::string(ApiPath(options.api.api));
    request.host = fmt::format("{}:{}", options.url.host, options.url.port);
    request.headers.push_back({"Content-Type", "application/json"});
    if (!options.auth_header.empty())
      request.headers.push_back({"Authorization", options.auth_header});
    request.body = std::move(item.body);
    record.sent_ns = shared_->Now();
    const int64_t deadline = MonoNowNs() + options.timeout_ns;
    result = co_await connection->Send(request, collector, deadline, options.idle_timeout_ns);
    if (!result.ok() && reused && result.error == http::ClientError::kClosed &&
        record.first_byte_ns == kNever) {
      // The server had closed this kept-alive connection (llama.cpp's server does after a
      // stream, though it says keep-alive): send once more on a fresh one, as browsers and
      // curl do. Nothing of an answer had arrived, so nothing is counted twice.
      shared_->stale_retries.fetch_add(1, std::memory_order_relaxed);
      connection = std::make_unique<http::ClientConnection>(context_.get_executor());
      result = co_await connection->Connect(shared_->endpoint, options.connect_timeout_ns);
      if (result.ok()) {
        record.sent_ns = shared_->Now();
        result = co_await connection->Send(request, collector, deadline, options.idle_timeout_ns);
      }
    }
  }
  record.end_ns = shared_->Now();
  if (!result.ok()) {
    record.error = ErrorOf(result.error);
    // The head arrived and said "error": keep the HTTP class, it says more than "closed".
    if (record.http_status != 0 && record.http_status / 100 != 2) collector.Complete(record.end_ns);
  } else {
    collector.Complete(record.end_ns);
  }
  collector.AttributeTokens();
  // Inter-token gaps: exact while the budget lasts, always into the histogram.
  std::vector<int64_t>& gaps = collector.gaps();
  for (int64_t gap : gaps) itl_histogram_.Record(gap);
  const size_t bytes = gaps.size() * sizeof(int64_t);
  if (!gaps.empty() && !itl_truncated_ &&
      shared_->itl_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes <=
          options.itl_budget_bytes) {
    record.itl_begin = static_cast<uint32_t>(itl_.size());
    record.itl_count = static_cast<uint32_t>(gaps.size());
    itl_.insert(itl_.end(), gaps.begin(), gaps.end());
  } else if (!gaps.empty()) {
    itl_truncated_ = true;
  }
  if (connection->is_open()) idle_.push_back(std::move(connection));
  in_flight_.erase(index);
  ReleaseSlot();
  shared_->in_flight.fetch_sub(1, std::memory_order_relaxed);
  Finish(record);
  co_return record;
}

asio::awaitable<void> Loop::User(std::function<std::optional<std::pair<uint64_t, WorkItem>>()> next,
                                 int64_t deadline_ns) {
  asio::steady_timer think(context_);
  while (!shared_->stop.load(std::memory_order_relaxed) &&
         (deadline_ns == 0 || shared_->Now() < deadline_ns)) {
    auto work = next();
    if (!work) break;
    work->second.planned_ns = shared_->Now();
    shared_->dispatched.fetch_add(1, std::memory_order_relaxed);
    RequestRecord record = co_await Execute(work->first, std::move(work->second));
    records_.push_back(record);
    if (shared_->options.think_ns > 0) {
      think.expires_after(std::chrono::nanoseconds(shared_->options.think_ns));
      co_await think.async_wait(kNoThrow);
    }
  }
  shared_->outstanding.fetch_sub(1, std::memory_order_relaxed);
}

// Scrapes the server's metrics every interval on loop 0 until stopped.
class Scraper {
 public:
  Scraper(Shared* shared, RunRecords* out) : shared_(shared), out_(out) {}

  asio::awaitable<void> Run(asio::io_context& context) {
    const RunnerOptions& options = shared_->options;
    const http::Url& url = options.scrape_url ? *options.scrape_url : options.url;
    asio::steady_timer timer(context);
    int64_t next = MonoNowNs();
    http::ClientConnection connection(context.get_executor());
    while (!shared_->run_over.load(std::memory_order_relaxed)) {
      if (!connection.is_open()) {
        http::ClientResult r =
            co_await connection.Connect(*shared_->scrape_endpoint, options.connect_timeout_ns);
        if (!r.ok()) Fail(r.message);
      }
      if (connection.is_open()) {
        Body body;
        http::OutgoingRequest request;
        request.method = "GET";
        request.target = options.scrape_path;
        request.host = fmt::format("{}:{}", url.host, url.port);
        const int64_t t = shared_->Now();
        http::ClientResult r = co_await connection.Send(
            request, body,
            MonoNowNs() + std::max<int64_t>(options.scrape_interval_ns, kNsPerSecond));
        if (!r.ok()) {
          Fail(r.message);
        } else if (r.status != 200) {
          Fail(fmt::format("{} answered HTTP {}", request.target, r.status));
        } else {
          Absorb(body.text, t);
        }
      }
      next += options.scrape_interval_ns;
      timer.expires_at(AtMono(next));
      co_await timer.async_wait(kNoThrow);
    }
  }

 private:
  struct Body : http::ResponseObserver {
    std::string text;
    bool OnBody(std::string_view data, int64_t) override {
      if (text.size() + data.size() > kMaxScrapeBytes) return false;
      text.append(data);
      return true;
    }
  };
  void Fail(std::string message) {
    ++out_->scrape_errors;
    out_->last_scrape_error = std::move(message);
  }
  void Absorb(const std::string& text, int64_t t) {
    const auto& wanted = shared_->options.scrape_metrics;
    ParsePrometheusText(text, [&](const PrometheusSample& sample) {
      if (std::find(wanted.begin(), wanted.end(), sample.name) == wanted.end()) return;
      std::string key = sample.labels.empty() ? std::string(sample.name)
                                              : fmt::format("{}{{{}}}", sample.name, sample.labels);
      auto it = index_.find(key);
      if (it == index_.end()) {
        if (out_->scrape_series.size() >= kMaxScrapeSeries) return;
        it = index_.emplace(key, static_cast<uint32_t>(out_->scrape_series.size())).first;
        out_->scrape_series.push_back(key);
      }
      out_->scrapes.push_back({t, it->second, sample.value});
    });
  }
  Shared* shared_;
  RunRecords* out_;
  std::unordered_map<std::string, uint32_t> index_;
};

}  // namespace

Result<RunRecords> RunLoad(const RunnerOptions& options, Workload& workload) {
  if (options.threads < 1 || options.threads > 64) {
    return InvalidArgumentError("--threads must be 1..64");
  }
  Shared shared(options);
  TITAN_ASSIGN_OR_RETURN(shared.endpoint, http::Resolve(options.url));
  if (!options.scrape_path.empty()) {
    TITAN_ASSIGN_OR_RETURN(shared.scrape_endpoint,
                           http::Resolve(options.scrape_url ? *options.scrape_url : options.url));
  }
  const int threads = options.threads;
  uint64_t cap_per_loop = 0;
  if (options.max_concurrency > 0) {
    cap_per_loop = std::max<uint64_t>(1, options.max_concurrency / threads);
  }
  std::vector<std::unique_ptr<Loop>> loops;
  for (int i = 0; i < threads; ++i) loops.push_back(std::make_unique<Loop>(&shared, cap_per_loop));

  RunRecords out;
  out.threads = threads;
  // Warm connections before the clock starts, each loop on this thread in turn.
  for (int i = 0; i < threads && options.warm_connections > 0; ++i) {
    const uint64_t count = options.warm_connections / threads +
                           (i < static_cast<int>(options.warm_connections % threads));
    asio::io_context& context = loops[i]->context();
    std::future<uint64_t> opened = asio::co_spawn(context, loops[i]->Warm(count), asio::use_future);
    context.run();
    context.restart();
    out.warm_connections += opened.get();
  }
  Scraper scraper(&shared, &out);
  const double cpu_before = ProcessCpuSeconds();
  out.start_wall_ns = WallNowNs();
  shared.start_mono_ns = MonoNowNs();
  const int64_t start = shared.start_mono_ns;
  const int64_t drain_ns = options.drain_ns > 0 ? options.drain_ns : options.timeout_ns;
  std::atomic<bool> schedule_done{false};  // every request has been dispatched
  std::atomic<int64_t> schedule_end{0};
  uint64_t next_index = 0;
  std::mutex workload_mutex;  // closed loop: users on several loops share the workload

  asio::io_context& main = loops[0]->context();
  if (options.users > 0) {
    auto next = [&]() -> std::optional<std::pair<uint64_t, WorkItem>> {
      std::lock_guard<std::mutex> lock(workload_mutex);
      auto item = workload.Next();
      if (!item) return std::nullopt;
      return std::make_pair(next_index++, std::move(*item));
    };
    for (int u = 0; u < options.users; ++u) {
      Loop* loop = loops[u % threads].get();
      shared.outstanding.fetch_add(1, std::memory_order_relaxed);
      asio::post(loop->context(), [loop, next, &options] {
        asio::co_spawn(loop->context(), loop->User(next, options.duration_ns), asio::detached);
      });
    }
  } else {
    // The scheduler: waits for each planned time on loop 0 and hands the request to its loop.
    asio::co_spawn(
        main,
        [&]() -> asio::awaitable<void> {
          asio::steady_timer timer(main);
          // Under a cap, requests past it wait for a slot holding their prompt; past
          // max_waiting of them the schedule pauses (polling, as the slots free on other loops).
          const uint64_t most_outstanding = options.max_concurrency > 0
                                                ? options.max_concurrency + options.max_waiting
                                                : std::numeric_limits<uint64_t>::max();
          // Paused past the end of --duration, the schedule ends there: what it planned later
          // is not sent (the drain deadline then starts, as for a schedule sent in time).
          auto past_duration = [&] {
            return options.duration_ns > 0 && MonoNowNs() - start >= options.duration_ns;
          };
          for (;;) {
            while (shared.outstanding.load(std::memory_order_relaxed) >= most_outstanding &&
                   !shared.stop.load(std::memory_order_relaxed) && !past_duration()) {
              out.waiting_full = true;
              timer.expires_after(std::chrono::milliseconds(1));
              co_await timer.async_wait(kNoThrow);
            }
            if (shared.stop.load(std::memory_order_relaxed)) break;
            if (out.waiting_full && past_duration()) break;
            std::optional<WorkItem> item = workload.Next();
            if (!item) break;
            if (options.duration_ns > 0 && item->planned_ns >= options.duration_ns) break;
            const int64_t due = start + item->planned_ns;
            if (MonoNowNs() < due) {
              timer.expires_at(AtMono(due));
              co_await timer.async_wait(kNoThrow);
              if (shared.stop.load(std::memory_order_relaxed)) break;
            } else {
              // Behind schedule (or a burst): let the requests already dispatched run first, so
              // a late schedule never floods the loop with requests that cannot start.
              co_await asio::post(main, asio::use_awaitable);
            }
            schedule_end = item->planned_ns;
            const uint64_t index = next_index++;
            shared.dispatched.fetch_add(1, std::memory_order_relaxed);
            out.peak_outstanding =
                std::max(out.peak_outstanding,
                         shared.outstanding.fetch_add(1, std::memory_order_relaxed) + 1);
            Loop* loop = loops[index % threads].get();
            if (loop == loops[0].get()) {
              loop->Dispatch(index, std::move(*item));
            } else {
              asio::post(loop->context(), [loop, index, work = std::move(*item)]() mutable {
                loop->Dispatch(index, std::move(work));
              });
            }
          }
          schedule_done = true;
        },
        asio::detached);
  }
  if (shared.scrape_endpoint) asio::co_spawn(main, scraper.Run(main), asio::detached);

  // The monitor: progress once a second, the end of the run, the drain deadline.
  asio::co_spawn(
      main,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(main);
        int64_t next_tick = start + kNsPerSecond;
        int64_t drain_deadline = 0;
        for (;;) {
          timer.expires_at(AtMono(std::min(next_tick, start + shared.Now() + 50 * kNsPerMs)));
          co_await timer.async_wait(kNoThrow);
          const int64_t now = MonoNowNs();
          if (now >= next_tick) {
            next_tick += kNsPerSecond;
            LiveStats live;
            live.elapsed_ns = now - start;
            live.planned = shared.dispatched.load();
            live.done = shared.done.load();
            live.errors = shared.errors.load();
            live.in_flight = shared.in_flight.load();
            live.slo_misses = shared.slo_misses.load();
            {
              std::lock_guard<std::mutex> lock(shared.recent_mutex);
              live.ttft_p50_ns = shared.recent_ttft.ValueAtQuantile(0.5);
              live.ttft_p99_ns = shared.recent_ttft.ValueAtQuantile(0.99);
              live.lag_p99_ns = shared.recent_lag.ValueAtQuantile(0.99);
              shared.recent_ttft.Clear();
              shared.recent_lag.Clear();
            }
            if (options.on_progress && options.on_progress(live)) {
              out.stopped_early = true;
              shared.stop = true;
            }
          }
          // Open loop: every request planned before the end has been sent, however late (the
          // scheduler itself stops at the first one planned past --duration; a client that
          // falls behind shows it in its lag, it does not drop requests). Closed loop: the
          // duration is over, or every user ended (workload exhausted).
          const bool sending_over = options.users > 0 ? shared.outstanding.load() == 0 ||
                                                            (options.duration_ns > 0 &&
                                                             now - start >= options.duration_ns)
                                                      : schedule_done.load();
          if (drain_deadline == 0 && (sending_over || shared.stop)) {
            shared.stop = true;  // no new sends; answers in flight may still end
            drain_deadline = now + drain_ns;
          }
          if (drain_deadline != 0 && (shared.outstanding.load() == 0 || now >= drain_deadline)) {
            break;
          }
        }
        out.elapsed_ns = MonoNowNs() - start;
        shared.stop = true;
        shared.run_over = true;
        for (auto& loop : loops) loop->context().stop();
      },
      asio::detached);

  std::vector<std::thread> workers;
  for (int i = 1; i < threads; ++i) {
    asio::io_context* context = &loops[i]->context();
    workers.emplace_back([context] {
      auto guard = asio::make_work_guard(*context);
      context->run();
    });
  }
  main.run();
  for (auto& loop : loops) loop->context().stop();
  for (auto& worker : workers) worker.join();
  out.client_cpu_seconds = ProcessCpuSeconds() - cpu_before;
  out.schedule_ns = schedule_end.load();
  out.planned_duration_ns = options.users > 0 ? 0 : options.duration_ns;
  out.max_concurrency = options.max_concurrency;
  out.max_waiting = options.max_concurrency > 0 ? options.max_waiting : 0;
  out.stale_connection_retries = shared.stale_retries.load();

  // Gather every loop's records; then those of requests still unanswered at the end.
  size_t total = 0;
  for (auto& loop : loops) total += loop->records().size();
  out.records.reserve(total);
  for (auto& loop : loops) {
    const uint32_t base = static_cast<uint32_t>(out.itl_ns.size());
    for (RequestRecord& r : loop->records()) {
      if (r.itl_count > 0) r.itl_begin += base;
      out.records.push_back(r);
    }
    out.itl_ns.insert(out.itl_ns.end(), loop->itl().begin(), loop->itl().end());
    out.itl_histogram.Merge(loop->itl_histogram());
    out.itl_truncated = out.itl_truncated || loop->itl_truncated();
  }
  for (auto& loop : loops) {
    for (const RequestRecord* unfinished : loop->Unfinished()) {
      RequestRecord r = *unfinished;  // still unanswered at the drain deadline
      r.error = r.sent_ns == kNever ? RequestError::kNotSent : RequestError::kTimeout;
      r.end_ns = out.elapsed_ns;
      out.records.push_back(r);
    }
  }
  std::sort(out.records.begin(), out.records.end(),
            [](const RequestRecord& a, const RequestRecord& b) { return a.index < b.index; });
  return out;
}

std::string_view RequestErrorName(RequestError error) {
  switch (error) {
    case RequestError::kNone:
      return "none";
    case RequestError::kConnect:
      return "connect";
    case RequestError::kTimeout:
      return "timeout";
    case RequestError::kClosed:
      return "closed";
    case RequestError::kMalformedHttp:
      return "malformed_http";
    case RequestError::kHttp4xx:
      return "http_4xx";
    case RequestError::kHttp429:
      return "http_429";
    case RequestError::kHttp5xx:
      return "http_5xx";
    case RequestError::kMalformedBody:
      return "malformed_body";
    case RequestError::kStreamCut:
      return "stream_cut";
    case RequestError::kMalformedEvent:
      return "malformed_event";
    case RequestError::kNotSent:
      return "not_sent";
  }
  return "unknown";
}

std::string_view TokenSourceName(TokenSource source) {
  switch (source) {
    case TokenSource::kUsage:
      return "usage";
    case TokenSource::kChunks:
      return "chunks";
    case TokenSource::kPlanned:
      return "planned";
  }
  return "unknown";
}

}  // namespace titan::load
