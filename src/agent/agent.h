// Agent: the per-node daemon behind `titan agent`. Wires the collectors (Sampler), the event
// receiver (training processes' datagrams -> StepTracker), detection (TransientPipeline), the
// flight recorder (every Series' ring) and the HTTP endpoints (HttpServer).
//
// Lifecycle: Agent::Start() returns a running agent or the first error that prevents it from
// serving (an occupied port or socket path, a bad --detect rule). Missing sources (no NVML, no
// PSI) are not errors: those collectors report themselves down. Stop() (also the destructor)
// stops every thread.
//
// Thread safety: Start/Stop from one thread; accessors are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/agent/detection.h"
#include "src/agent/event_log.h"
#include "src/agent/sampler.h"
#include "src/agent/step_tracker.h"
#include "src/base/env.h"
#include "src/base/status.h"
#include "src/metrics/registry.h"

namespace titan {

class DumpDirectory;
class EventReceiver;
class HttpServer;

struct AgentOptions {
  std::string listen_address = "127.0.0.1";
  int port = 9470;                                    // 0: any free port (tests)
  std::string socket_path = "/tmp/titan-agent.sock";  // "" disables event ingestion
  // > 0: raise net.unix.max_dgram_qlen to this before creating the socket if it is lower
  // (root in the agent's network namespace; see EventReceiverOptions). 0 leaves it alone.
  int raise_dgram_queue_to = 0;
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
  int64_t interval_ns = 0;  // every collector's interval; 0: each collector's default (100 ms)
  std::map<std::string, int64_t> intervals;      // per collector overrides
  std::vector<std::string> disabled_collectors;  // by name
  std::string nvml_library;                      // "" = libnvidia-ml.so.1
  int window_seconds = 15;
  int64_t recorder_duration_ns = 600LL * 1'000'000'000;
  size_t recorder_budget_bytes = 512ULL << 20;
  std::vector<std::string> detect_rules;  // FAMILY=SPEC
  bool detect_all = false;                // mad on every detect-eligible family
  double max_transients_per_second = 20;
  size_t max_series = 50'000;  // every series the agent keeps (see RegistryOptions)
  std::string dump_dir;        // auto-dump around transients ("" = off); must be writable
  int64_t dump_before_ns = 30LL * 1'000'000'000;
  int64_t dump_after_ns = 5LL * 1'000'000'000;
  // Bounds on dump_dir (DumpDirectoryOptions): at most one dump per dump_min_interval_ns, the
  // newest dump_keep files within dump_max_bytes are kept.
  int64_t dump_min_interval_ns = 30LL * 1'000'000'000;
  size_t dump_keep = 50;
  uint64_t dump_max_bytes = 1ULL << 30;
  // `titan predict risk --json` output (""= none): the agent serves this node's probability of a
  // failure within the horizon as titan_node_failure_probability, re-reading the file when it
  // changes (a periodic `titan predict risk` elsewhere keeps it current).
  std::string risk_file;
  std::string node_name;  // this node's name in the risk file (default: the hostname)
};

class Agent {
 public:
  static Result<std::unique_ptr<Agent>> Start(const AgentOptions& options);
  ~Agent();
  void Stop();

  int port() const;
  MetricRegistry& registry() { return *registry_; }
  EventLog& event_log() { return *event_log_; }
  Sampler& sampler() { return *sampler_; }
  TransientPipeline& transients() { return *transients_; }
  const AgentOptions& options() const { return options_; }

  // Renders /metrics (also used by the live view and benchmarks).
  std::string RenderMetrics(bool open_metrics, int window_seconds) const;

 private:
  explicit Agent(const AgentOptions& options);
  Status Init();
  void Housekeeping();
  void OnTransient(const TransientEvent& event);

  const AgentOptions options_;
  Env env_;
  std::unique_ptr<MetricRegistry> registry_;
  std::unique_ptr<EventLog> event_log_;
  WatchedProcesses processes_;
  std::unique_ptr<TransientPipeline> transients_;
  std::unique_ptr<StepTracker> step_tracker_;  // fed only on the event receiver's thread
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<EventReceiver> receiver_;
  std::unique_ptr<HttpServer> http_;

  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread housekeeping_;
  std::vector<std::pair<int64_t, TransientEvent>> pending_dumps_;  // (due mono ns, event)
  std::unique_ptr<DumpDirectory> dump_dir_;                        // null without --dump-dir
  uint64_t dumps_rate_limited_ = 0;                                // under mutex_
  uint64_t dumps_queue_full_ = 0;                                  // under mutex_
};

}  // namespace titan
