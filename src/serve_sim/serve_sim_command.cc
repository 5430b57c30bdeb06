// `titan serve-sim`: flags -> ServeSimOptions -> ServeSim::Start; waits for SIGTERM/SIGINT.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <boost/asio/ip/address.hpp>

#include "src/base/command_line.h"
#include "src/base/duration.h"
#include "src/base/fd_limit.h"
#include "src/base/log.h"
#include "src/serve_sim/serve_sim_command.h"
#include "src/serve_sim/server.h"

namespace titan {
namespace {

int Usage(const std::string& message) {
  std::fprintf(stderr, "titan serve-sim: %s (see --help)\n", message.c_str());
  return 2;
}

bool IsLoopback(const std::string& host) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

}  // namespace

int ServeSimCommand(int argc, char** argv) {
  serve_sim::ServeSimOptions options;
  serve_sim::EngineConfig& engine = options.engine;
  CLI::App app{
      "titan serve-sim: a simulated continuous-batching LLM server (vLLM-like scheduling, an\n"
      "OpenAI-compatible API, vLLM metric names, injectable faults) for load and gateway tests\n"
      "without GPUs. One token = one whitespace-separated word of the prompt; the model's cost\n"
      "per step is\n"
      "  decode  = itl_base x (1 + load_factor x (running - 1) / max_num_seqs)\n"
      "  prefill = prefill_overhead + prefill_per_token x (prompt tokens - prefix-cache hits)\n"
      "(docs/serve-sim.md has the whole model). Durations: 100ms, 2.5s, 50us, 2m.\n\n"
      "Examples:\n"
      "  titan serve-sim --port 8000\n"
      "  titan serve-sim --port 0 --itl-base 1ms --max-num-seqs 256     # a fast replica\n"
      "  titan serve-sim --fault stall=2s@10s --fault slow=5@20s --fault crash@30s\n"
      "  titan serve-sim --startup-delay 3s --fault error-rate=0.05\n"
      "  curl -s localhost:8000/admin/fault -d '{\"stall\":\"2s\"}'   # at run time\n",
      "titan serve-sim"};
  app.get_formatter()->column_width(34);
  std::string host = "127.0.0.1", admin = "auto", log_level = "info";
  int port = 8000;
  int threads = 1;
  std::string prefill_overhead = "2ms", prefill_per_token = "50us", itl_base = "10ms",
              startup_delay = "0";
  std::vector<std::string> faults;
  int64_t max_connections = static_cast<int64_t>(options.http.max_connections);

  app.add_option("--host", host, "Address to listen on (0.0.0.0: every interface)")
      ->capture_default_str();
  app.add_option("--port", port, "TCP port; 0 picks a free one (printed on stderr)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--model", options.model, "Model name served (any name a request gives is echoed)")
      ->capture_default_str();
  app.add_option("--threads", threads, "HTTP event-loop threads (the engine is one)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--max-num-seqs", engine.max_num_seqs, "Running sequences (batch seats)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000}));
  app.add_option("--max-waiting", engine.max_waiting,
                 "Waiting-queue bound; a request beyond it gets 429 + Retry-After: 1")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{100'000'000}));
  app.add_option("--max-num-batched-tokens", engine.max_num_batched_tokens,
                 "Prefill tokens admitted per step (the first admission always fits)")
      ->capture_default_str();
  app.add_option("--max-model-len", engine.max_model_len,
                 "Context length: prompt + max_tokens per request, else 400")
      ->capture_default_str();
  app.add_option("--kv-capacity-tokens", engine.kv_capacity_tokens,
                 "KV-cache size in tokens; over it the newest sequence is preempted")
      ->capture_default_str();
  app.add_option("--block-size", engine.block_tokens, "KV and prefix-cache block, in tokens")
      ->capture_default_str();
  app.add_option("--prefix-cache-blocks", engine.prefix_cache_blocks,
                 "Prefix-cache LRU size in blocks; 0 turns it off")
      ->capture_default_str();
  app.add_option("--prefill-overhead", prefill_overhead, "Fixed cost of a step that prefills")
      ->capture_default_str();
  app.add_option("--prefill-per-token", prefill_per_token, "Prefill cost per uncached token")
      ->capture_default_str();
  app.add_option("--itl-base", itl_base, "Decode step of a batch of one (inter-token latency)")
      ->capture_default_str();
  app.add_option("--load-factor", engine.load_factor,
                 "Decode slowdown at a full batch: x (1 + load_factor)")
      ->capture_default_str();
  app.add_option("--eos-probability", engine.eos_probability,
                 "Chance per token to stop early (requests with ignore_eos never do)")
      ->capture_default_str();
  app.add_option("--default-max-tokens", options.default_max_tokens,
                 "max_tokens of a request that gives none")
      ->capture_default_str();
  app.add_option("--max-tokens-limit", options.max_tokens_limit,
                 "Largest max_tokens accepted (also bounded by --max-model-len)")
      ->capture_default_str();
  app.add_option("--embedding-dim", options.embedding_dim, "Length of /v1/embeddings vectors")
      ->capture_default_str();
  app.add_option("--seed", engine.seed,
                 "Seed of output tokens (request i uses seed + i), error-rate draws and vectors")
      ->capture_default_str();
  app.add_option("--fault", faults,
                 "A scheduled fault (repeatable): stall=DURATION@TIME (no step runs: every "
                 "stream freezes), slow=FACTOR@TIME (step costs x FACTOR; 1 restores), "
                 "error-rate=P[@TIME] (that fraction of requests gets 500), crash@TIME (the "
                 "process dies by SIGKILL); TIME counts from start")
      ->allow_extra_args(false);
  app.add_option("--startup-delay", startup_delay,
                 "/health and the APIs answer 503 for this long after start")
      ->capture_default_str();
  app.add_option("--admin", admin,
                 "POST /admin/fault, a test hook: auto = on when --host is loopback")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--max-connections", max_connections,
                 "Open connections; beyond them new ones get 503")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}));
  app.add_option("--log-level", log_level, "debug, info, warning or error")->capture_default_str();
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  LogLevel level;
  if (!ParseLogLevel(log_level, &level)) return Usage("--log-level: " + log_level + " is unknown");
  SetLogLevel(level);
  struct DurationFlag {
    const char* flag;
    const std::string& text;
    int64_t* out;
  };
  const DurationFlag durations[] = {
      {"--prefill-overhead", prefill_overhead, &engine.prefill_overhead_ns},
      {"--prefill-per-token", prefill_per_token, &engine.prefill_per_token_ns},
      {"--itl-base", itl_base, &engine.itl_base_ns},
      {"--startup-delay", startup_delay, &options.startup_delay_ns},
  };
  for (const DurationFlag& d : durations) {
    if (!ParseDurationOrZeroNs(d.text, d.out)) {
      return Usage(
          fmt::format("{} '{}' is not a duration such as 10ms, 50us or 2s", d.flag, d.text));
    }
  }
  for (const std::string& text : faults) {
    Result<serve_sim::FaultSpec> fault = serve_sim::ParseFaultSpec(text);
    if (!fault.ok()) return Usage(std::string(fault.status().message()));
    options.faults.push_back(*fault);
  }
  options.http.address = host;
  options.http.port = port;
  options.http.threads = threads;
  options.http.max_connections = static_cast<size_t>(max_connections);
  options.admin = admin == "on" || (admin == "auto" && IsLoopback(host));

  // Thousands of client connections need as many descriptors as the hard limit allows.
  RaiseOpenFileLimit();

  // Signals are taken by sigwait below; the server's threads inherit the blocked mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  Result<std::unique_ptr<serve_sim::ServeSim>> server = serve_sim::ServeSim::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "titan serve-sim: %s\n", std::string(server.status().message()).c_str());
    const StatusCode code = server.status().code();
    return code == StatusCode::kInvalidArgument ? 2 : 1;
  }
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::fprintf(stderr, "serve-sim: listening on http://%s:%d (model %s, max_num_seqs %lld)\n",
               shown.c_str(), (*server)->port(), options.model.c_str(),
               static_cast<long long>(engine.max_num_seqs));
  std::fflush(stderr);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  Log(LogLevel::kInfo, "serve-sim", "signal {}: stopping", signal_number);
  (*server)->Stop();
  return 0;
}

}  // namespace titan
