// The open-loop load runner: sends each planned request at its planned time, whatever the
// server is doing (a stalled server does not slow the schedule down: coordinated omission is
// avoided by construction, and every latency can be measured from the planned time), times
// every request and every streamed chunk, and scrapes the server's metrics on the same clock.
//
// Closed-loop users (--users N) are an option: each user sends, waits for the answer, thinks,
// and sends again; their planned time is the moment they send.
//
// Concurrency: `threads` event loops, each with its own connections; request i is sent by loop
// i % threads. Under --max-concurrency a request waits for a free slot (per loop: the cap is
// split evenly across loops); that wait is recorded on its own (sent_ns - dispatched_ns).
//
// Thread safety: Run() blocks the calling thread until the run has ended; the observer
// callbacks run on loop threads (see each).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/http/client.h"
#include "src/load/histogram.h"
#include "src/load/openai.h"
#include "src/load/record.h"

namespace titan::load {

// One planned request, built before its time comes so building never delays sending.
struct WorkItem {
  int64_t planned_ns = 0;  // offset from the run start; ignored for closed-loop users
  std::string body;
  int64_t prompt_tokens = 0;  // as planned (the workload's count)
  int64_t output_tokens = 0;  // max_tokens asked for
  int32_t group = -1;
};

// The requests of a run in planned order. Called from one thread at a time.
class Workload {
 public:
  virtual ~Workload() = default;
  // The next request, or nullopt when the workload is exhausted.
  virtual std::optional<WorkItem> Next() = 0;
};

// A scraped sample of one server metric series.
struct ScrapeSample {
  int64_t time_ns;  // offset from the run start
  uint32_t series;  // index into RunRecords::scrape_series
  double value;
};

// What the progress callback sees once a second.
struct LiveStats {
  int64_t elapsed_ns = 0;
  uint64_t planned = 0;  // dispatched so far
  uint64_t done = 0;
  uint64_t errors = 0;
  uint64_t in_flight = 0;
  uint64_t slo_misses = 0;  // finished requests for which options.misses_slo returned true
  int64_t ttft_p50_ns = 0;  // over the last second's completions (corrected), 0 when none
  int64_t ttft_p99_ns = 0;
  int64_t lag_p99_ns = 0;  // schedule lag over the last second
};

struct RunnerOptions {
  http::Url url;
  ApiOptions api;
  int threads = 1;
  int64_t duration_ns = 0;               // 0: until the workload ends
  int64_t timeout_ns = 300'000'000'000;  // per request, from its send
  int64_t connect_timeout_ns = 5'000'000'000;
  // A stream silent this long after its first body byte is a timeout (an SSE idle timeout:
  // a server that stops mid-answer costs this, not the whole timeout_ns). 0: none.
  int64_t idle_timeout_ns = 60'000'000'000;
  int64_t drain_ns = 0;          // after the schedule ends, wait this long for answers (0: timeout)
  uint64_t max_concurrency = 0;  // 0: unbounded (open loop)
  // Under max_concurrency, at most this many requests wait for a slot (each holds its prompt):
  // past it the schedule pauses, its later sends are late (schedule lag) and the run is
  // invalid. Bounds the client's memory when the rate is far above what the cap carries.
  uint64_t max_waiting = 10'000;
  int users = 0;                        // > 0: closed loop with this many users
  int64_t think_ns = 0;                 // closed loop: pause between a user's answer and next send
  std::string scrape_path;              // e.g. "/metrics"; "" = no scraping
  std::optional<http::Url> scrape_url;  // defaults to url's host with scrape_path
  std::vector<std::string> scrape_metrics;  // family names to keep (exact)
  int64_t scrape_interval_ns = 250'000'000;
  size_t itl_budget_bytes = 256u << 20;  // exact inter-token gaps kept up to this
  std::string auth_header;               // "Bearer ..." or ""
  // Connections opened (spread over the loops) before the first request, so that a burst at
  // the start does not pay for connects in its schedule lag.
  uint64_t warm_connections = 0;
  // Once a second on loop 0: return true to end the run early (sweep: outcome decided).
  std::function<bool(const LiveStats&)> on_progress;
  // On the loop of a finished request: whether it misses the SLO (for LiveStats::slo_misses).
  std::function<bool(const RequestRecord&)> misses_slo;
};

struct RunRecords {
  int64_t start_wall_ns = 0;        // wall clock of offset 0
  int64_t elapsed_ns = 0;           // from start to the last answer (or the drain deadline)
  int64_t schedule_ns = 0;          // from start to the last planned send
  int64_t planned_duration_ns = 0;  // the schedule's length as asked (--duration), 0 if none
  bool stopped_early = false;
  std::vector<RequestRecord> records;      // by index
  std::vector<int64_t> itl_ns;             // exact gaps (RequestRecord::itl_begin/count)
  bool itl_truncated = false;              // budget reached: use itl_histogram for percentiles
  LatencyHistogram itl_histogram;          // every gap, also past the budget
  std::vector<std::string> scrape_series;  // "name{labels}"
  std::vector<ScrapeSample> scrapes;
  uint64_t scrape_errors = 0;
  std::string last_scrape_error;
  int threads = 1;
  uint64_t stale_connection_retries = 0;  // requests resent on a fresh connection
  uint64_t warm_connections = 0;          // opened before the first request
  uint64_t max_concurrency = 0;           // the cap the run had (0: none)
  uint64_t max_waiting = 0;               // RunnerOptions::max_waiting, under a cap
  bool waiting_full = false;              // the schedule paused because max_waiting were waiting
  uint64_t peak_outstanding = 0;          // most requests dispatched and unanswered at once
  double client_cpu_seconds = 0;          // user + system CPU of this process during the run
};

// Runs the load. Errors: the URL cannot be resolved, or a bad option; request failures are
// recorded, not returned.
Result<RunRecords> RunLoad(const RunnerOptions& options, Workload& workload);

}  // namespace titan::load
