// `titan gateway`: flags and --config -> GatewayConfig -> Gateway::Start; SIGHUP reloads the
// config file (flags still win), SIGTERM/SIGINT drain and stop.
#include "src/gateway/gateway_command.h"

#include <signal.h>

#include <cstdio>
#include <functional>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/base/atomic_file.h"
#include "src/base/command_line.h"
#include "src/base/duration.h"
#include "src/base/fd_limit.h"
#include "src/base/log.h"
#include "src/gateway/config.h"
#include "src/gateway/gateway.h"

namespace titan::gateway {

namespace {

int Usage(const std::string& message) {
  std::fprintf(stderr, "titan gateway: %s (see titan gateway --help)\n", message.c_str());
  return 2;
}

}  // namespace

int GatewayCommand(int argc, char** argv) {
  CLI::App app{
      "titan gateway: an OpenAI-compatible proxy that keeps P99 in bounds under bursts.\n"
      "Admission (bounded priority queues, per-replica in-flight and token budgets, deadlines,\n"
      "429 + Retry-After), limits (prompt tokens, max_tokens, n, body size), routing\n"
      "(round_robin, least_outstanding, p2c, prefix, session), dynamic batching of embeddings\n"
      "and non-streamed completions, health checks, outlier ejection with back-off and slow\n"
      "start, retries before the first byte, supervised replicas; stall detection from progress,\n"
      "hedged and rescued requests within a prompt-token budget, ejection only when the others\n"
      "can carry the load (a slow replica is weighted down instead). docs/gateway.md has every\n"
      "config key. Durations: 250ms, 2s, 1m.\n\n"
      "Examples:\n"
      "  titan gateway --replica http://127.0.0.1:8001 --replica http://127.0.0.1:8002\n"
      "  titan gateway --launch 'llama-server -m model.gguf --port {port}' --replicas 2 \\\n"
      "      --routing prefix --max-inflight 4 --max-queue 64 --ttft-slo 2s\n"
      "  titan gateway --config gateway.yaml --listen 0.0.0.0:8000   # kill -HUP reloads it\n"
      "  curl -s localhost:8000/admin/replicas; curl -s localhost:8000/metrics\n",
      "titan gateway"};
  app.get_formatter()->column_width(36);
  std::string config_path, listen, routing, log_level = "info";
  std::vector<std::string> replicas, long_replicas;
  std::string launch;
  int launch_replicas = 1;
  int64_t memory_max = 0;
  std::string launch_logs;
  int max_inflight = 0, retries = -1;
  bool adaptive = false, batching = false, no_hedging = false, no_stall_detection = false;
  double hedge_budget = -1;
  std::string target_ttft, queue_timeout, max_queue_delay, ttft_slo, health_interval,
      outlier_interval, slow_start, drain_timeout, base_ejection;
  int64_t token_budget = -1, max_prompt_tokens = -1, long_prompt_tokens = -1, max_tokens = -1,
          max_body_bytes = -1;
  size_t max_queue = 0, max_batch_size = 0;
  std::string access_log, event_log, perfetto;

  app.add_option("--config", config_path,
                 "YAML configuration (docs/gateway.md); reloaded on SIGHUP");
  app.add_option("--listen", listen, "ADDRESS:PORT to serve (default 127.0.0.1:8000; port 0: any)");
  app.add_option("--replica", replicas,
                 "a replica's base URL, e.g. http://127.0.0.1:8001 (repeat)");
  app.add_option("--long-replica", long_replicas,
                 "a replica set aside for long prompts (with --long-prompt-tokens)");
  app.add_option("--launch", launch, "start replicas with this command; {port} is replaced");
  app.add_option("--replicas", launch_replicas, "how many --launch replicas")
      ->check(CLI::Range(1, 256));
  app.add_option("--memory-max", memory_max, "bytes: each launched replica's cgroup memory.max");
  app.add_option("--launch-logs", launch_logs, "directory for launched replicas' output");
  app.add_option("--routing", routing, "round_robin | least_outstanding | p2c | prefix | session");
  app.add_option("--max-inflight", max_inflight, "requests sent to one replica at once (default 8)")
      ->check(CLI::Range(1, 100000));
  app.add_flag("--adaptive", adaptive, "adapt each replica's in-flight limit to --target-ttft");
  app.add_option("--target-ttft", target_ttft, "TTFT p90 the adaptive limit aims for (500ms)");
  app.add_option("--token-budget", token_budget, "prompt+max_tokens tokens in flight per replica")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--max-queue", max_queue, "waiting requests per class before 429 (1024)")
      ->check(CLI::Range(size_t{1}, size_t{10'000'000}));
  app.add_option("--queue-timeout", queue_timeout, "longest wait for a seat before 429 (30s)");
  app.add_option("--max-prompt-tokens", max_prompt_tokens, "longer prompts get 400 (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--long-prompt-tokens", long_prompt_tokens,
                 "longer prompts go to --long-replica replicas")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--max-tokens", max_tokens, "a larger max_tokens gets 400 (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--max-body-bytes", max_body_bytes, "larger bodies get 413 (8 MiB)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 32));
  app.add_flag("--batching", batching, "merge embeddings and non-streamed completions");
  app.add_option("--max-batch-size", max_batch_size, "members per merged request (8)")
      ->check(CLI::Range(size_t{1}, size_t{4096}));
  app.add_option("--max-queue-delay", max_queue_delay, "longest wait for a batch to fill (2ms)");
  app.add_flag("--no-hedging", no_hedging,
               "send no hedge after a late first token (rescues from stalled replicas stay on)");
  app.add_option("--hedge-budget", hedge_budget,
                 "hedged + rescued prompt tokens per class, as a fraction of admitted ones (0.05)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--no-stall-detection", no_stall_detection,
               "never take a silent replica out of rotation (and so no rescues)");
  app.add_option("--retries", retries, "retries on another replica before the first byte (1)")
      ->check(CLI::Range(0, 10));
  app.add_option("--ttft-slo", ttft_slo, "TTFT target for the SLO-attainment metric");
  app.add_option("--health-interval", health_interval, "between health checks (1s)");
  app.add_option("--outlier-interval", outlier_interval, "outlier evaluation interval (1s)");
  app.add_option("--base-ejection", base_ejection, "first ejection's length, doubling (5s)");
  app.add_option("--slow-start", slow_start, "traffic ramp after (re)admission (10s; 0 off)");
  app.add_option("--drain-timeout", drain_timeout, "on SIGTERM, wait this long for requests (30s)");
  app.add_option("--access-log", access_log, "JSON lines, one per request ('-': stdout)");
  app.add_option("--event-log", event_log, "JSON lines: ejections, sheds, retries, restarts");
  app.add_option("--perfetto", perfetto, "write a Perfetto trace of events and queues at exit");
  app.add_option("--log-level", log_level, "debug | info | warning | error");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  LogLevel level;
  if (!ParseLogLevel(log_level, &level)) return Usage("--log-level: " + log_level + " is unknown");
  SetLogLevel(level);

  // Flags over the file, both at start and at every reload.
  std::string flag_error;
  auto apply_flags = [&](GatewayConfig* c) -> bool {
    auto duration = [&](const char* flag, const std::string& text, int64_t* out, bool zero) {
      if (text.empty()) return true;
      if (zero ? ParseDurationOrZeroNs(text, out) : ParseDurationNs(text, out)) return true;
      flag_error = fmt::format("{} '{}' is not a duration such as 250ms or 2s", flag, text);
      return false;
    };
    if (!listen.empty()) {
      Status parsed = ParseListen(listen, &c->listen_address, &c->listen_port);
      if (!parsed.ok()) {
        flag_error = fmt::format("--listen: {}", parsed.message());
        return false;
      }
    }
    if (!replicas.empty() || !long_replicas.empty()) {
      c->replicas.clear();
      for (const std::string& url : replicas) c->replicas.push_back({url, "default"});
      for (const std::string& url : long_replicas) c->replicas.push_back({url, "long"});
    }
    if (!launch.empty()) {
      c->launch.command = launch;
      c->launch.replicas = launch_replicas;
    }
    if (memory_max > 0) c->launch.memory_max_bytes = memory_max;
    if (!launch_logs.empty()) c->launch.log_dir = launch_logs;
    if (!routing.empty()) {
      Result<RoutingPolicy> p = ParseRoutingPolicy(routing);
      if (!p.ok()) {
        flag_error = "--routing: " + std::string(p.status().message());
        return false;
      }
      c->routing.policy = *p;
    }
    if (max_inflight > 0) c->admission.max_inflight_per_replica = max_inflight;
    if (adaptive) c->admission.adaptive = true;
    if (token_budget >= 0) c->admission.token_budget_per_replica = token_budget;
    if (max_queue > 0) {
      for (PriorityClass& pc : c->admission.classes) pc.max_queue = max_queue;
    }
    if (max_prompt_tokens >= 0) c->limits.max_prompt_tokens = max_prompt_tokens;
    if (long_prompt_tokens >= 0) c->limits.long_prompt_tokens = long_prompt_tokens;
    if (max_tokens >= 0) c->limits.max_tokens = max_tokens;
    if (max_body_bytes > 0) c->limits.max_body_bytes = static_cast<size_t>(max_body_bytes);
    if (batching) c->batching.enabled = true;
    if (no_hedging) c->hedging.enabled = false;
    if (hedge_budget >= 0) c->hedging.budget = hedge_budget;
    if (no_stall_detection) c->stall.enabled = false;
    if (max_batch_size > 0) c->batching.max_batch_size = max_batch_size;
    if (retries >= 0) c->retries = retries;
    if (!access_log.empty()) c->access_log = access_log;
    if (!event_log.empty()) c->event_log = event_log;
    if (!perfetto.empty()) c->perfetto = perfetto;
    return duration("--target-ttft", target_ttft, &c->admission.target_ttft_ns, false) &&
           duration("--queue-timeout", queue_timeout, &c->admission.queue_timeout_ns, false) &&
           duration("--max-queue-delay", max_queue_delay, &c->batching.max_queue_delay_ns, true) &&
           duration("--ttft-slo", ttft_slo, &c->ttft_slo_ns, true) &&
           duration("--health-interval", health_interval, &c->health.interval_ns, false) &&
           duration("--outlier-interval", outlier_interval, &c->outlier.interval_ns, false) &&
           duration("--base-ejection", base_ejection, &c->outlier.base_ejection_ns, false) &&
           duration("--slow-start", slow_start, &c->outlier.slow_start_ns, true) &&
           duration("--drain-timeout", drain_timeout, &c->drain_timeout_ns, true);
  };
  auto load = [&]() -> Result<GatewayConfig> {
    GatewayConfig c;
    if (!config_path.empty()) {
      TITAN_ASSIGN_OR_RETURN(c, LoadConfig(config_path));
    }
    if (!apply_flags(&c)) return InvalidArgumentError(flag_error);
    // A log over the config (or over another log) would corrupt it for the next reload.
    std::vector<std::string> inputs;
    if (!config_path.empty()) inputs.push_back(config_path);
    TITAN_RETURN_IF_ERROR(RefuseClashingOutputs({{"access_log (--access-log)", c.access_log},
                                                 {"event_log (--event-log)", c.event_log},
                                                 {"perfetto (--perfetto)", c.perfetto}},
                                                inputs));
    TITAN_RETURN_IF_ERROR(ValidateConfig(c));
    return c;
  };
  Result<GatewayConfig> config = load();
  if (!config.ok()) return Usage(std::string(config.status().message()));

  RaiseOpenFileLimit();
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Result<std::unique_ptr<Gateway>> gateway = Gateway::Start(*config);
  if (!gateway.ok()) {
    std::fprintf(stderr, "titan gateway: %s\n", std::string(gateway.status().message()).c_str());
    return gateway.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  const std::string& host = config->listen_address;
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::fprintf(stderr, "gateway: listening on http://%s:%d (%zu replicas, routing %s)\n",
               shown.c_str(), (*gateway)->port(), (*gateway)->Replicas().size(),
               std::string(RoutingPolicyName(config->routing.policy)).c_str());
  std::fflush(stderr);
  for (;;) {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (signal_number == SIGHUP) {
      Result<GatewayConfig> next = load();
      Status applied = next.ok() ? (*gateway)->Reload(*next) : next.status();
      if (applied.ok()) {
        Log(LogLevel::kInfo, "gateway", "SIGHUP: configuration reloaded");
      } else {
        Log(LogLevel::kError, "gateway", "SIGHUP: kept the running configuration: {}",
            applied.message());
      }
      continue;
    }
    Log(LogLevel::kInfo, "gateway", "signal {}: draining (up to {})", signal_number,
        FormatDuration(config->drain_timeout_ns));
    const int left = (*gateway)->Drain();
    if (left > 0)
      Log(LogLevel::kWarning, "gateway",
          "{} requests still running at the drain deadline: each was answered 503 (a stream: "
          "an error event)",
          left);
    (*gateway)->Stop();
    return 0;
  }
}

}  // namespace titan::gateway
