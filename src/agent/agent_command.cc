// `titan agent`: flags -> AgentOptions, run until SIGINT/SIGTERM, optional live view.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/agent/agent.h"
#include "src/agent/agent_command.h"
#include "src/agent/http_server.h"
#include "src/agent/live_view.h"
#include "src/base/clock.h"
#include "src/base/command_line.h"
#include "src/base/duration.h"
#include "src/base/duration_option.h"
#include "src/base/log.h"
#include "src/client/wire.h"
#include "src/collectors/collector_registry.h"

namespace titan {
namespace {

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

}  // namespace

int AgentCommand(int argc, char** argv) {
  CLI::App app{
      "titan agent: the per-node daemon. Samples host (/proc, /sys), GPU (NVML) and training-\n"
      "process signals every 10-100 ms, detects transients as they happen, keeps a flight\n"
      "recorder of raw samples, and serves Prometheus/OpenMetrics with per-window min/max/mean\n"
      "so a 50 ms spike survives a 15 s scrape.\n\n"
      "Examples:\n"
      "  titan agent                          # defaults for an 8-GPU training node\n"
      "  titan agent --live                   # and show what it sees, refreshed every second\n"
      "  titan agent --interval 10ms --interval-of nvml=20ms --dump-dir /var/lib/titan\n"
      "  curl -s localhost:9470/metrics | grep window_max\n"
      "  curl -s 'localhost:9470/recorder?last=60s' > titan.json   # open in ui.perfetto.dev\n",
      "titan agent"};
  AgentOptions options;
  const char* env_socket = std::getenv(wire::kSocketEnv);
  if (env_socket != nullptr && *env_socket != '\0') {
    std::string first(env_socket);
    options.socket_path = first.substr(0, first.find(':'));
  }
  int64_t interval_ns = 0;  // 0: each collector's own
  std::vector<std::string> interval_of;
  std::string log_level = "info";
  bool live = false;
  int64_t run_for_ns = 0;
  size_t recorder_mb = options.recorder_budget_bytes >> 20;
  uint64_t dump_max_mb = options.dump_max_bytes >> 20;

  app.add_option("--listen", options.listen_address, "Address to serve HTTP on")
      ->capture_default_str();
  app.add_option("--port", options.port, "HTTP port (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--socket", options.socket_path,
                 "Unix datagram socket for training-process events (\"\" to disable); default "
                 "from $TITAN_AGENT_SOCKET")
      ->capture_default_str();
  app.add_option("--risk", options.risk_file,
                 "serve this node's failure probability from a titan predict risk --json file "
                 "(re-read when it changes) as titan_node_failure_probability");
  app.add_option("--node-name", options.node_name,
                 "this node's name in the --risk file (default: the hostname)");
  app.add_option("--raise-event-queue", options.raise_dgram_queue_to,
                 "Raise net.unix.max_dgram_qlen to N before creating the socket if it is lower "
                 "(root; per network namespace; systemd hosts use 512). 0: leave it")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  AddDurationOption(app, "--interval", &interval_ns,
                    "Sampling interval of every collector; default: each collector's own (100ms)",
                    kNsPerSecond / 100, 10 * kNsPerSecond)
      ->default_str("");
  app.add_option("--interval-of", interval_of,
                 "Per-collector interval, e.g. --interval-of nvml=20ms (repeatable)");
  app.add_option("--disable", options.disabled_collectors,
                 "Collectors to switch off: cpu, memory, net, disk, psi, infiniband, process, "
                 "nvml (repeatable)");
  app.add_option("--proc-root", options.proc_root, "Where /proc is (tests, containers)")
      ->capture_default_str();
  app.add_option("--sys-root", options.sys_root, "Where /sys is")->capture_default_str();
  app.add_option("--nvml-library", options.nvml_library,
                 "Path of libnvidia-ml.so.1 (default: the dynamic loader's search)");
  app.add_option("--window", options.window_seconds,
                 "Seconds covered by the _window_min/_max/_mean series (set to the scrape "
                 "interval)")
      ->capture_default_str()
      ->check(CLI::Range(1, 120));
  AddDurationOption(app, "--recorder", &options.recorder_duration_ns, "Flight-recorder length",
                    kNsPerSecond, 7 * 86400 * kNsPerSecond);
  app.add_option("--recorder-memory-mb", recorder_mb, "Flight-recorder memory budget")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--detect", options.detect_rules,
                 "Detector rule FAMILY=SPEC[;SPEC] or FAMILY=off, e.g. "
                 "'titan_gpu_utilization_ratio=mad:k=4;cusum' (repeatable; '*' globs)");
  app.add_flag("--detect-all", options.detect_all,
               "Also watch every host signal that supports it (cpu, memory, disk, network, "
               "pressure, process) with mad:k=6");
  app.add_option("--max-transients-per-second", options.max_transients_per_second,
                 "Rate limit on processed transients")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 10000.0));
  app.add_option("--dump-dir", options.dump_dir,
                 "Write a Perfetto dump of the recorder around each transient into this directory "
                 "(it must be writable; checked at start)");
  AddDurationOption(app, "--dump-min-interval", &options.dump_min_interval_ns,
                    "At most one automatic dump per this long; closer transients are counted in "
                    "titan_recorder_dumps_suppressed_total",
                    0, 86400 * kNsPerSecond);
  app.add_option("--dump-keep", options.dump_keep,
                 "Keep the newest N dumps in --dump-dir, removing older ones")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--dump-max-mb", dump_max_mb,
                 "Keep at most this many MB of dumps in --dump-dir (the newest always stays)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--max-series", options.max_series,
                 "Most series the agent keeps; more are counted in "
                 "titan_agent_series_dropped_total")
      ->capture_default_str()
      ->check(CLI::Range(1000, 10'000'000));
  app.add_flag("--live", live, "Show a live terminal view of the signals and transients");
  AddDurationOption(app, "--run-for", &run_for_ns, "Exit after this long (demos, tests); 0: never",
                    0, 1'000'000'000 * kNsPerSecond);
  app.add_option("--log-level", log_level, "debug, info, warning, error")->capture_default_str();

  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  if (!options.risk_file.empty() && options.node_name.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    options.node_name = host;
  }
  LogLevel level;
  if (!ParseLogLevel(log_level, &level)) {
    std::fprintf(stderr, "titan agent: --log-level '%s': expected debug, info, warning or error\n",
                 log_level.c_str());
    return 2;
  }
  SetLogLevel(level);
  if (interval_ns > 0) options.interval_ns = interval_ns;
  options.recorder_budget_bytes = recorder_mb << 20;
  options.dump_max_bytes = dump_max_mb << 20;
  for (const std::string& item : interval_of) {
    const size_t eq = item.find('=');
    int64_t ns = 0;
    if (eq == std::string::npos || !ParseDurationNs(item.substr(eq + 1), &ns)) {
      std::fprintf(stderr,
                   "titan agent: --interval-of '%s': expected COLLECTOR=DURATION, e.g. nvml=20ms\n",
                   item.c_str());
      return 2;
    }
    options.intervals[item.substr(0, eq)] = ns;
  }
  // Collector names are checked here: a misspelt one was silently ignored.
  for (const std::string& name : options.disabled_collectors) {
    if (auto found = FindCollector(name); !found.ok()) {
      std::fprintf(stderr, "titan agent: --disable '%s': %s\n", name.c_str(),
                   std::string(found.status().message()).c_str());
      return 2;
    }
  }
  for (const auto& [name, ns] : options.intervals) {
    if (auto found = FindCollector(name); !found.ok()) {
      std::fprintf(stderr, "titan agent: --interval-of '%s=...': %s\n", name.c_str(),
                   std::string(found.status().message()).c_str());
      return 2;
    }
    if (ns < 10 * kNsPerMs || ns > 10 * kNsPerSecond) {
      std::fprintf(stderr, "titan agent: interval of %s must be between 10ms and 10s\n",
                   name.c_str());
      return 2;
    }
  }
  if (options.interval_ns != 0 &&
      (options.interval_ns < 10 * kNsPerMs || options.interval_ns > 10 * kNsPerSecond)) {
    std::fprintf(stderr, "titan agent: --interval must be between 10ms and 10s\n");
    return 2;
  }

  auto agent = Agent::Start(options);
  if (!agent.ok()) {
    std::fprintf(stderr, "titan agent: %s\n", agent.status().ToString().c_str());
    // A flag naming something unusable (a socket path too long, a port taken) is a usage error.
    const StatusCode code = agent.status().code();
    return code == StatusCode::kInvalidArgument || code == StatusCode::kUnavailable ||
                   code == StatusCode::kAlreadyExists
               ? kExitUsageError
               : 1;
  }
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Tests and supervisors read the port from here when --port 0 was given.
  std::printf("titan agent listening on http://%s:%d\n", options.listen_address.c_str(),
              (*agent)->port());
  std::fflush(stdout);

  const int64_t deadline = run_for_ns > 0 ? MonoNowNs() + run_for_ns : 0;
  const bool tty = isatty(STDOUT_FILENO);
  int64_t next_view = MonoNowNs();
  while (!g_stop && (deadline == 0 || MonoNowNs() < deadline)) {
    usleep(50'000);
    if (live && MonoNowNs() >= next_view) {
      next_view += kNsPerSecond;
      std::string view = RenderLiveView(**agent, options.window_seconds);
      std::fputs(tty ? "\x1b[H\x1b[2J" : "\n", stdout);
      std::fputs(view.c_str(), stdout);
      std::fflush(stdout);
    }
  }
  (*agent)->Stop();
  return 0;
}

}  // namespace titan
