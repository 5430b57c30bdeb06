// titan load: open-loop load tests of OpenAI-compatible servers; titan load sweep: the knee.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "src/base/atomic_file.h"
#include "src/base/clock.h"
#include "src/base/command_line.h"
#include "src/base/duration.h"
#include "src/base/fd_limit.h"
#include "src/http/client.h"
#include "src/load/load_command.h"
#include "src/load/output.h"
#include "src/load/stats.h"
#include "src/load/sweep.h"
#include "src/load/workload.h"
#include "src/report/report.h"

namespace titan::load {
namespace {

// `--report FILE`: the result drawn by titan report; `json_path` (may be empty) names it there.
Status WriteReportTo(const std::string& path, report::InputKind kind, nlohmann::json result,
                     const std::string& json_path) {
  Result<report::Written> w =
      report::WriteReportOf(kind, std::move(result),
                            json_path.empty() || json_path == "-" ? "this run" : json_path, path);
  return w.ok() ? OkStatus() : w.status();
}

// Exit codes (also in --help).
constexpr int kExitOk = 0, kExitError = 1, kExitUsage = 2, kExitSloMissed = 3, kExitInvalid = 4;

const std::vector<std::string> kDefaultScrapeMetrics = {
    "vllm:num_requests_waiting",     "vllm:num_requests_running",    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",     "llamacpp:requests_processing", "llamacpp:requests_deferred",
    "llamacpp:kv_cache_usage_ratio", "titan_gateway_queue_depth",    "titan_gateway_in_flight"};

struct Flags {
  std::string url = "http://127.0.0.1:8000";
  std::string api = "completions";
  std::string model = "default";
  bool no_stream = false;
  bool no_ignore_eos = false;
  std::string arrivals;
  double rate = 0;
  std::string duration = "30s";
  uint64_t requests = 0;
  uint64_t seed = 1;
  int users = 0;
  std::string think = "0";
  std::string input_tokens = "128";
  std::string output_tokens = "64";
  int64_t prefix_groups = 0;
  int64_t prefix_tokens = 256;
  std::string prompt_file, trace_file;
  double time_scale = 1;
  uint64_t max_concurrency = 0;
  uint64_t warm_connections = 0;
  int threads = 1;
  std::string timeout = "5m", connect_timeout = "5s", idle_timeout = "60s", drain;
  std::string slo;
  std::string lag_bound = "auto";
  std::string scrape = "auto";
  std::string scrape_interval = "250ms";
  std::vector<std::string> scrape_metrics;
  std::string tokenize = "auto";
  std::string wait_ready;
  std::string json_path, records_path, timeline_path, perfetto_path, report_path;
  std::string extra_body;
  std::string api_key;
  bool quiet = false;
  // sweep
  double start_rate = 1, max_rate = 100'000, precision = 0.1;
  int repeats = 1, max_probes = 20;
  std::string probe_duration = "20s";
};

CLI::Validator Duration(bool allow_zero) {
  return CLI::Validator(
      [allow_zero](std::string& text) -> std::string {
        int64_t ns = 0;
        bool ok = allow_zero ? ParseDurationOrZeroNs(text, &ns) : ParseDurationNs(text, &ns);
        return ok ? "" : "expected a duration such as 500ms, 30s, 2m";
      },
      "DURATION");
}

int64_t Ns(const std::string& text) {
  int64_t ns = 0;
  ParseDurationOrZeroNs(text, &ns);
  return ns;
}

void AddRunFlags(CLI::App* app, Flags* f) {
  app->add_option("--url", f->url, "server base URL (the API paths are appended)")
      ->capture_default_str();
  app->add_option("--api", f->api, "completions | chat | embeddings")
      ->check(CLI::IsMember({"completions", "chat", "embeddings"}))
      ->capture_default_str();
  app->add_option("--model", f->model, "the \"model\" field of every request")
      ->capture_default_str();
  app->add_flag("--no-stream", f->no_stream, "ask for whole answers (no SSE; TTFT = E2E)");
  app->add_flag("--no-ignore-eos", f->no_ignore_eos,
                "let the server stop before max_tokens (default asks ignore_eos: exact lengths)");
  auto* when = app->add_option_group("when", "when requests are sent (open loop by default)");
  when->add_option("--arrivals", f->arrivals,
                   "arrival process: R | constant:rate=R | poisson:rate=R | "
                   "gamma:rate=R,burstiness=B | burst:quiet=10s,size=50[,repeat=K][,rate=R] | "
                   "stages:10x30s,50x30s | ramp:from=1,to=100,over=60s (default poisson:rate=10)");
  when->add_option("--rate", f->rate, "shortcut for --arrivals poisson:rate=R")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            double rate = 0;
            const bool number = CLI::detail::lexical_cast(text, rate);
            return number && std::isfinite(rate) && rate > 0 ? "" : "a positive request rate";
          },
          "RATE"));
  when->add_option("--duration", f->duration, "schedule length")
      ->check(Duration(true))
      ->capture_default_str();
  when->add_option("--requests", f->requests, "stop after this many requests (0: no limit)");
  when->add_option("--seed", f->seed, "seed of arrivals and prompts")->capture_default_str();
  when->add_option("--users", f->users, "closed loop: this many users, each waits for its answer")
      ->check(CLI::Range(1, 100'000));
  when->add_option("--think", f->think, "closed loop: pause between a user's requests")
      ->check(Duration(true));
  when->add_option("--trace", f->trace_file,
                   "replay a trace: Azure LLM inference CSV (TIMESTAMP,ContextTokens,"
                   "GeneratedTokens) or JSONL (mooncake: timestamp,input_length,output_length,"
                   "hash_ids)");
  when->add_option("--time-scale", f->time_scale, "trace replay speed-up (2 = twice as fast)");
  auto* what = app->add_option_group("what", "what requests ask");
  what->add_option("--input-tokens", f->input_tokens,
                   "prompt length: N | uniform:MIN,MAX | normal:mean=M,sd=S | "
                   "lognormal:mean=M,sigma=S (tokens, via the server's /tokenize when it has one)")
      ->capture_default_str();
  what->add_option("--output-tokens", f->output_tokens, "max_tokens, same forms")
      ->capture_default_str();
  what->add_option("--prefix-groups", f->prefix_groups,
                   "shared-prefix groups: each request starts with one of N shared prefixes");
  what->add_option("--prefix-tokens", f->prefix_tokens, "length of each shared prefix")
      ->capture_default_str();
  what->add_option("--prompts", f->prompt_file, "prompts from a file: JSONL or ShareGPT JSON");
  what->add_option("--extra-body", f->extra_body,
                   "raw JSON members added to every body, e.g. '\"top_k\":1'");
  what->add_option("--api-key", f->api_key,
                   "sent as 'Authorization: Bearer KEY' (or set "
                   "OPENAI_API_KEY)");
  auto* how = app->add_option_group("client", "the client");
  how->add_option("--max-concurrency", f->max_concurrency,
                  "at most N requests in flight; the wait for a slot is reported on its own (past "
                  "10000 waiting, the schedule pauses and the run is invalid)");
  how->add_option("--threads", f->threads, "client event loops")->capture_default_str();
  how->add_option("--warm-connections", f->warm_connections,
                  "connections opened before the first request, so that a burst at the start "
                  "does not pay for connects (off by default: idle connections hold the worker "
                  "threads of thread-per-connection servers such as llama-server)");
  how->add_option("--timeout", f->timeout, "per request, from its send")
      ->check(Duration(false))
      ->capture_default_str();
  how->add_option("--connect-timeout", f->connect_timeout)
      ->check(Duration(false))
      ->capture_default_str();
  how->add_option("--idle-timeout", f->idle_timeout,
                  "a streamed answer silent this long after its first byte is a timeout")
      ->check(Duration(false))
      ->capture_default_str();
  how->add_option("--drain", f->drain,
                  "after the schedule, wait at most this for answers "
                  "(default: --timeout)")
      ->check(Duration(false));
  how->add_option("--wait-ready", f->wait_ready,
                  "first wait up to this long for GET /health to answer 200")
      ->check(Duration(false));
  how->add_option("--tokenize", f->tokenize,
                  "auto: measure tokens per word with the server's /tokenize; off: 1 word = 1 "
                  "token")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  auto* judge = app->add_option_group("judge", "what counts");
  judge->add_option("--slo", f->slo,
                    "gates such as p99_ttft=500ms,p99_itl=50ms,p50_e2e=2s,errors=1%: exit 3 "
                    "when missed; goodput counts requests meeting every threshold");
  judge
      ->add_option("--lag-bound", f->lag_bound,
                   "a run whose schedule lag p99 is over this is invalid (exit 4); auto: 1% of "
                   "the median corrected TTFT (E2E when not streamed), at least 5ms")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            int64_t ns = 0;
            return text == "auto" || ParseDurationNs(text, &ns) ? "" : "auto or a duration";
          },
          "auto|DURATION"))
      ->capture_default_str();
  judge
      ->add_option("--scrape", f->scrape,
                   "server metrics to scrape during the run: auto (GET /metrics if it answers), "
                   "off, a path, or a URL")
      ->capture_default_str();
  judge->add_option("--scrape-interval", f->scrape_interval)
      ->check(Duration(false))
      ->capture_default_str();
  judge->add_option("--scrape-metric", f->scrape_metrics,
                    "metric family to keep (repeatable; default: vLLM's and llama.cpp's queue, "
                    "running and KV-cache gauges)");
  auto* out = app->add_option_group("output", "output");
  out->add_option("--json", f->json_path, "the complete result as JSON ('-' for stdout)");
  out->add_option("--records", f->records_path, "one line per request (.csv or .jsonl)");
  out->add_option("--timeline", f->timeline_path, "per-second timeline (CSV)");
  out->add_option("--perfetto", f->perfetto_path, "Perfetto / chrome://tracing JSON");
  out->add_option("--report", f->report_path,
                  "one self-contained HTML page with the plots (titan report)");
  out->add_flag("-q,--quiet", f->quiet, "no progress line");
}

// Everything a run needs, built from the flags once.
struct Setup {
  WorkloadOptions workload;
  RunnerOptions runner;
  SummaryOptions summary;
  nlohmann::json config;
};

Result<Setup> Build(const Flags& f, bool sweep) {
  Setup s;
  TITAN_ASSIGN_OR_RETURN(http::Url url, http::ParseUrl(f.url));
  s.runner.url = url;
  ApiOptions api;
  if (!ParseApi(f.api, &api.api)) return InvalidArgumentError("--api: completions|chat|embeddings");
  api.model = f.model;
  api.stream = !f.no_stream && api.api != Api::kEmbeddings;
  api.ignore_eos = !f.no_ignore_eos;
  TITAN_RETURN_IF_ERROR(SetExtraFields(f.extra_body, &api));
  s.runner.api = api;
  s.workload.api = api;
  std::string arrivals = f.arrivals;
  if (f.rate > 0) {
    if (!arrivals.empty()) return InvalidArgumentError("give --rate or --arrivals, not both");
    arrivals = fmt::format("poisson:rate={}", f.rate);
  }
  if (arrivals.empty()) arrivals = "poisson:rate=10";
  TITAN_ASSIGN_OR_RETURN(s.workload.arrivals, ParseArrivalSpec(arrivals));
  TITAN_ASSIGN_OR_RETURN(s.workload.input_tokens, ParseLengthSpec(f.input_tokens));
  TITAN_ASSIGN_OR_RETURN(s.workload.output_tokens, ParseLengthSpec(f.output_tokens));
  s.workload.duration_ns = Ns(sweep ? f.probe_duration : f.duration);
  s.workload.max_requests = f.requests;
  s.workload.seed = f.seed;
  s.workload.trace_path = f.trace_file;
  s.workload.time_scale = f.time_scale;
  s.workload.prefix_groups = f.prefix_groups;
  s.workload.prefix_tokens = f.prefix_tokens;
  s.workload.prompt_file = f.prompt_file;
  if (!f.trace_file.empty() && !f.prompt_file.empty()) {
    return InvalidArgumentError("--trace brings its own prompt lengths: drop --prompts");
  }
  std::vector<std::string> inputs;
  for (const std::string& in : {f.prompt_file, f.trace_file}) {
    if (!in.empty()) inputs.push_back(in);
  }
  TITAN_RETURN_IF_ERROR(RefuseClashingOutputs({{"--json", f.json_path},
                                               {"--records", f.records_path},
                                               {"--timeline", f.timeline_path},
                                               {"--perfetto", f.perfetto_path},
                                               {"--report", f.report_path}},
                                              inputs));
  s.runner.threads = f.threads;
  s.runner.duration_ns = f.trace_file.empty() ? s.workload.duration_ns : 0;
  if (f.users > 0) s.runner.duration_ns = s.workload.duration_ns;
  s.workload.closed_loop = f.users > 0 && f.trace_file.empty();
  s.runner.timeout_ns = Ns(f.timeout);
  s.runner.connect_timeout_ns = Ns(f.connect_timeout);
  s.runner.idle_timeout_ns = Ns(f.idle_timeout);
  s.runner.drain_ns = f.drain.empty() ? 0 : Ns(f.drain);
  s.runner.max_concurrency = f.max_concurrency;
  s.runner.warm_connections = f.warm_connections;
  if (f.max_concurrency > 0) {
    s.runner.warm_connections = std::min(s.runner.warm_connections, f.max_concurrency);
  }
  s.runner.users = f.users;
  s.runner.think_ns = Ns(f.think);
  s.runner.scrape_interval_ns = Ns(f.scrape_interval);
  s.runner.scrape_metrics = f.scrape_metrics.empty() ? kDefaultScrapeMetrics : f.scrape_metrics;
  std::string key = f.api_key;
  if (key.empty()) {
    if (const char* env = getenv("OPENAI_API_KEY")) key = env;
  }
  if (!key.empty()) s.runner.auth_header = "Bearer " + key;
  if (f.scrape != "off" && f.scrape != "auto") {
    if (f.scrape.starts_with("http://")) {
      TITAN_ASSIGN_OR_RETURN(http::Url scrape_url, http::ParseUrl(f.scrape));
      s.runner.scrape_path = scrape_url.path.empty() ? "/metrics" : scrape_url.path;
      scrape_url.path.clear();
      s.runner.scrape_url = scrape_url;
    } else {
      s.runner.scrape_path = f.scrape.starts_with("/") ? f.scrape : "/" + f.scrape;
    }
  }
  s.summary.lag_bound_ns = f.lag_bound == "auto" ? 0 : Ns(f.lag_bound);
  if (!f.slo.empty()) {
    TITAN_ASSIGN_OR_RETURN(s.summary.slo, ParseSlo(f.slo));
  } else if (sweep) {
    return InvalidArgumentError("titan load sweep needs --slo, e.g. --slo p99_ttft=500ms");
  }
  s.config = {{"url", url.ToString()},
              {"api", f.api},
              {"model", f.model},
              {"stream", api.stream},
              {"arrivals", ToString(s.workload.arrivals)},
              {"duration_s", NsToSeconds(s.workload.duration_ns)},
              {"requests", f.requests},
              {"seed", f.seed},
              {"users", f.users},
              {"input_tokens", ToString(s.workload.input_tokens)},
              {"output_tokens", ToString(s.workload.output_tokens)},
              {"prefix_groups", f.prefix_groups},
              {"prefix_tokens", f.prefix_tokens},
              {"prompts", f.prompt_file},
              {"trace", f.trace_file},
              {"max_concurrency", f.max_concurrency},
              {"threads", f.threads},
              {"slo", f.slo}};
  return s;
}

// Waits for health, measures tokens per word, decides on scraping: the checks before a run.
Status Prepare(const Flags& f, Setup* s) {
  const http::Url& url = s->runner.url;
  if (!f.wait_ready.empty()) {
    const int64_t deadline = MonoNowNs() + Ns(f.wait_ready);
    std::string last = "no answer";
    for (;;) {
      http::OutgoingRequest health;
      health.method = "GET";
      health.target = "/health";
      auto r = http::Fetch(url, health, 2 * kNsPerSecond);
      if (r.ok() && r->status == 200) break;
      last = r.ok() ? fmt::format("HTTP {}", r->status) : r.status().ToString();
      if (MonoNowNs() > deadline) {
        return UnavailableError(
            fmt::format("{}/health not ready within {}: {}", url.ToString(), f.wait_ready, last));
      }
      usleep(200'000);
    }
  }
  if (f.tokenize == "auto" && f.trace_file.empty() && f.prompt_file.empty()) {
    auto ratio = MeasureTokensPerWord(url, 5 * kNsPerSecond);
    if (ratio.ok()) {
      s->workload.tokens_per_word = *ratio;
      s->config["tokens_per_word"] = *ratio;
      if (!f.quiet) {
        fmt::print(stderr, "load: the server's tokenizer makes {:.3f} tokens of a word\n", *ratio);
      }
    } else if (!f.quiet) {
      fmt::print(stderr, "load: {}; prompt lengths are in words\n", ratio.status().message());
    }
  }
  if (f.scrape == "auto") {
    http::OutgoingRequest probe;
    probe.method = "GET";
    probe.target = "/metrics";
    auto r = http::Fetch(url, probe, 2 * kNsPerSecond);
    if (r.ok() && r->status == 200) s->runner.scrape_path = "/metrics";
  }
  if (!s->runner.scrape_path.empty()) {
    s->config["scrape"] = s->runner.scrape_path;
    if (!f.quiet) {
      fmt::print(stderr, "load: scraping {}{} every {}\n",
                 (s->runner.scrape_url ? *s->runner.scrape_url : url).ToString(),
                 s->runner.scrape_path, FormatDuration(s->runner.scrape_interval_ns));
    }
  }
  return OkStatus();
}

std::string ProgressLine(const LiveStats& live) {
  return fmt::format(
      "[{:>4}s] sent {:>7} done {:>7} err {:>5} in-flight {:>5} | ttft p50 {:>8} p99 {:>8} | "
      "lag p99 {}",
      live.elapsed_ns / kNsPerSecond, live.planned, live.done, live.errors, live.in_flight,
      FormatDurationShort(live.ttft_p50_ns), FormatDurationShort(live.ttft_p99_ns),
      FormatDurationShort(live.lag_p99_ns));
}

struct Outcome {
  RunRecords run;
  Summary summary;
};

Result<Outcome> RunOnce(const Flags& f, Setup setup, bool progress,
                        std::function<bool(const LiveStats&)> stop_when = nullptr) {
  TITAN_ASSIGN_OR_RETURN(std::unique_ptr<Workload> workload, MakeWorkload(setup.workload));
  const Slo slo = setup.summary.slo;
  if (!slo.empty()) {
    setup.runner.misses_slo = [slo](const RequestRecord& r) {
      if (!r.ok()) return true;
      if (slo.ttft_ns > 0 && r.first_token_ns - r.planned_ns > slo.ttft_ns) return true;
      if (slo.e2e_ns > 0 && r.end_ns - r.planned_ns > slo.e2e_ns) return true;
      return false;
    };
  }
  const bool tty = isatty(STDERR_FILENO);
  setup.runner.on_progress = [&, progress, tty](const LiveStats& live) {
    if (progress) {
      std::string line = ProgressLine(live);
      if (tty) {
        fmt::print(stderr, "\r{}\033[K", line);
      } else {
        fmt::print(stderr, "{}\n", line);
      }
    }
    return stop_when ? stop_when(live) : false;
  };
  TITAN_ASSIGN_OR_RETURN(RunRecords run, RunLoad(setup.runner, *workload));
  if (progress && tty) fmt::print(stderr, "\n");
  Summary summary = Summarize(run, setup.summary);
  return Outcome{std::move(run), std::move(summary)};
}

int Fail(const Status& status) {
  fmt::print(stderr, "titan load: {}\n", status.message());
  // A bad flag or a bad input file (missing, malformed, or a value out of its range) is a
  // usage error.
  const bool usage = status.code() == StatusCode::kInvalidArgument ||
                     status.code() == StatusCode::kOutOfRange ||
                     status.code() == StatusCode::kNotFound;
  return usage ? kExitUsage : kExitError;
}

int RunCommand(const Flags& f) {
  auto setup = Build(f, false);
  if (!setup.ok()) return Fail(setup.status());
  if (Status s = Prepare(f, &*setup); !s.ok()) return Fail(s);
  nlohmann::json config = setup->config;
  auto outcome = RunOnce(f, *setup, !f.quiet);
  if (!outcome.ok()) return Fail(outcome.status());
  const Summary& summary = outcome->summary;
  const RunRecords& run = outcome->run;
  fmt::print("{}", FormatSummary(summary, run));
  std::vector<std::pair<std::string, Status>> writes;
  if (!f.json_path.empty() || !f.report_path.empty()) {
    nlohmann::json result = RunJson(summary, run, config);
    if (!f.json_path.empty()) {
      writes.push_back({f.json_path, WriteFileAtomically(f.json_path, result.dump(1) + "\n")});
    }
    if (!f.report_path.empty()) {
      writes.push_back({f.report_path, WriteReportTo(f.report_path, report::InputKind::kLoadRun,
                                                     std::move(result), f.json_path)});
    }
  }
  if (!f.records_path.empty())
    writes.push_back({f.records_path, WriteRecords(f.records_path, run)});
  if (!f.timeline_path.empty()) {
    writes.push_back({f.timeline_path, WriteTimelineCsv(f.timeline_path, summary)});
  }
  if (!f.perfetto_path.empty()) {
    writes.push_back({f.perfetto_path, WritePerfetto(f.perfetto_path, summary, run)});
  }
  for (const auto& [path, status] : writes) {
    if (!status.ok()) return Fail(status);
    if (path != "-") fmt::print(stderr, "load: wrote {}\n", path);
  }
  if (!summary.valid) return kExitInvalid;
  if (!summary.slo_passed) return kExitSloMissed;
  return kExitOk;
}

int SweepCommand(const Flags& f) {
  auto setup = Build(f, true);
  if (!setup.ok()) return Fail(setup.status());
  if (Status s = Prepare(f, &*setup); !s.ok()) return Fail(s);
  const double probe_s = NsToSeconds(setup->workload.duration_ns);
  // The strictest quantile among the latency gates bounds how many misses a probe may have.
  double allowed_miss_fraction = 1;
  for (const SloGate& g : setup->summary.slo.gates) {
    if (!g.is_error_rate && g.quantile > 0 && g.quantile < 1) {
      allowed_miss_fraction = std::min(allowed_miss_fraction, 1 - g.quantile);
    }
  }
  nlohmann::json probes_json = nlohmann::json::array();
  SweepOptions options;
  options.start_rate = f.start_rate;
  options.max_rate = f.max_rate;
  options.precision = f.precision;
  options.repeats = f.repeats;
  options.max_probes = f.max_probes;
  auto result = Sweep(options, [&](double rate) -> Result<Probe> {
    Setup probe_setup = *setup;
    probe_setup.workload.arrivals = WithRate(setup->workload.arrivals, rate);
    const double expected = rate * probe_s;
    std::vector<uint64_t> in_flight_history;
    auto decided = [&, expected](const LiveStats& live) {
      in_flight_history.push_back(live.in_flight);
      if (allowed_miss_fraction < 1 && live.slo_misses > allowed_miss_fraction * expected + 1) {
        return true;  // the gate cannot pass any more
      }
      // Over-saturated: in flight grew every second for 5 s and holds over 2 s of arrivals.
      const size_t n = in_flight_history.size();
      if (n >= 6 && live.in_flight > 2 * rate + 10) {
        bool growing = true;
        for (size_t i = n - 5; i < n; ++i)
          growing = growing && in_flight_history[i] > in_flight_history[i - 1];
        if (growing) return true;
      }
      return false;
    };
    if (!f.quiet)
      fmt::print(stderr, "sweep: probing {:.4g} requests/s for {:.0f} s\n", rate, probe_s);
    TITAN_ASSIGN_OR_RETURN(Outcome outcome, RunOnce(f, probe_setup, !f.quiet, decided));
    Probe p;
    p.rate = rate;
    p.stopped_early = outcome.run.stopped_early;
    p.summary = std::move(outcome.summary);
    p.why = ProbeVerdict(p.summary);
    p.passed = p.summary.valid && p.summary.slo_passed && !p.stopped_early;
    if (p.stopped_early && p.why.empty()) p.why = "stopped early";
    nlohmann::json run_json = RunJson(p.summary, outcome.run, probe_setup.config);
    run_json.erase("timeline");  // the probes' timelines are large; the curve needs the summary
    run_json.erase("server_metrics");
    probes_json.push_back({{"rate", rate},
                           {"passed", p.passed},
                           {"stopped_early", p.stopped_early},
                           {"why", p.why},
                           {"run", run_json}});
    if (!f.quiet) {
      fmt::print(stderr, "sweep: {:.4g}/s {} {}\n", rate, p.passed ? "passed" : "MISSED", p.why);
    }
    return p;
  });
  if (!result.ok()) return Fail(result.status());
  fmt::print("{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8}  {}\n", "rate/s", "achieved",
             "ttft mean", "ttft p99", "e2e mean", "e2e p99", "errors", "SLO");
  // The curve, by rate (repeats in the order run); the knee marked once.
  std::vector<const Probe*> curve;
  for (const Probe& p : result->probes) curve.push_back(&p);
  std::stable_sort(curve.begin(), curve.end(),
                   [](const Probe* a, const Probe* b) { return a->rate < b->rate; });
  const Probe* knee = nullptr;
  for (const Probe* p : curve) {
    if (result->knee_found && p->rate == result->knee_rate) knee = p;
  }
  for (const Probe* probe : curve) {
    const Probe& p = *probe;
    auto ms = [](double ns) { return fmt::format("{:.1f}ms", ns / 1e6); };
    fmt::print("{:>10.4g} {:>10.4g} {:>10} {:>10} {:>10} {:>10} {:>8}  {}{}\n", p.rate,
               p.summary.achieved_rate, ms(p.summary.ttft.mean), ms(p.summary.ttft.p99),
               ms(p.summary.e2e.mean), ms(p.summary.e2e.p99), p.summary.failed,
               p.passed ? "ok" : "MISSED", probe == knee ? "  <- knee" : "");
  }
  fmt::print("\n{}\n", result->verdict);
  if (!f.json_path.empty() || !f.report_path.empty()) {
    nlohmann::json out = {{"kind", "titan.load.sweep"},     {"version", 1},
                          {"config", setup->config},        {"knee_found", result->knee_found},
                          {"knee_rate", result->knee_rate}, {"verdict", result->verdict},
                          {"probes", probes_json}};
    if (!f.json_path.empty()) {
      if (Status s = WriteFileAtomically(f.json_path, out.dump(1) + "\n"); !s.ok()) return Fail(s);
      if (f.json_path != "-") fmt::print(stderr, "load: wrote {}\n", f.json_path);
    }
    if (!f.report_path.empty()) {
      Status s =
          WriteReportTo(f.report_path, report::InputKind::kLoadSweep, std::move(out), f.json_path);
      if (!s.ok()) return Fail(s);
      fmt::print(stderr, "load: wrote {}\n", f.report_path);
    }
  }
  return result->knee_found ? kExitOk : kExitSloMissed;
}

}  // namespace

int LoadCommand(int argc, char** argv) {
  CLI::App app{
      "Open-loop, coordinated-omission-free load tests of OpenAI-compatible LLM servers.\n\n"
      "Requests go at their planned times whatever the server does, so a stall shows in full\n"
      "in latencies measured from the planned send (TTFT, E2E); the same latencies from the\n"
      "actual send, the schedule lag, per-request records, server metrics scraped on the same\n"
      "clock and a Perfetto trace come with every run.\n\n"
      "  titan load --url http://127.0.0.1:8080 --arrivals burst:quiet=10s,size=50 --duration 11s\n"
      "  titan load --url http://127.0.0.1:8000 --rate 20 --duration 60s --slo p99_ttft=500ms\n"
      "  titan load sweep --url http://127.0.0.1:8000 --slo p99_ttft=500ms,p99_itl=50ms\n\n"
      "Exit: 0 ok, 1 error, 2 usage, 3 SLO missed (sweep: no knee found), 4 invalid run\n"
      "(the client could not keep the schedule)",
      "titan load"};
  app.require_subcommand(0, 1);
  Flags f;
  AddRunFlags(&app, &f);
  CLI::App* sweep = app.add_subcommand(
      "sweep",
      "find the largest request rate that meets --slo (the knee), probing up then "
      "bisecting");
  AddRunFlags(sweep, &f);
  sweep->add_option("--start-rate", f.start_rate, "first probe, requests/s")->capture_default_str();
  sweep->add_option("--max-rate", f.max_rate, "highest probe")->capture_default_str();
  sweep
      ->add_option("--precision", f.precision,
                   "stop when the miss and pass rates are within this fraction")
      ->capture_default_str();
  sweep->add_option("--repeats", f.repeats, "extra runs at the rates next to the boundary")
      ->capture_default_str();
  sweep->add_option("--max-probes", f.max_probes)->capture_default_str();
  sweep->add_option("--probe-duration", f.probe_duration, "length of each probe")
      ->check(Duration(false))
      ->capture_default_str();
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  RaiseOpenFileLimit();  // one descriptor per connection in flight
  return sweep->parsed() ? SweepCommand(f) : RunCommand(f);
}

}  // namespace titan::load
