#include "src/agent/agent.h"

#include <sys/stat.h>

#include <chrono>

#include <fmt/format.h>

#include "src/agent/dump_directory.h"
#include "src/agent/http_server.h"
#include "src/agent/recorder_dump.h"
#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/client/event_receiver.h"
#include "src/collectors/collector_registry.h"
#include "src/collectors/nvml_collector.h"
#include "src/metrics/exposition.h"
#include "src/predict/node_risk.h"

namespace titan {
namespace {

const SignalDesc kInvalidSamples{"titan_collector_invalid_samples_total",
                                 "Readings a collector rejected as impossible (e.g. >100 %).",
                                 SignalKind::kCounter,
                                 {"collector"},
                                 {}};
const SignalDesc kEventsReceived{"titan_events_received_total",
                                 "Event datagrams accepted from training processes.",
                                 SignalKind::kCounter,
                                 {},
                                 {}};
const SignalDesc kEventsRejected{"titan_events_rejected_total",
                                 "Event datagrams rejected, by reason.",
                                 SignalKind::kCounter,
                                 {"reason"},
                                 {}};
const SignalDesc kFailureProbability{
    "titan_node_failure_probability",
    "This node's probability of a failure within the horizon (titan predict risk, --risk).",
    SignalKind::kGauge,
    {"horizon_days"},
    {}};
const SignalDesc kSeriesCount{
    "titan_agent_series", "Series the agent keeps.", SignalKind::kGauge, {}, {}};
const SignalDesc kRecorderBytes{"titan_agent_recorder_bytes",
                                "Memory reserved for the flight recorder.",
                                SignalKind::kGauge,
                                {},
                                {}};
const SignalDesc kSeriesDropped{"titan_agent_series_dropped_total",
                                "Series not created because --max-series was reached.",
                                SignalKind::kCounter,
                                {},
                                {}};

// The node's risk from a `titan predict risk --json` file: re-read when its modification time
// changes, the last good value kept (and a warning logged) when it cannot be read.
class NodeRiskGauge {
 public:
  NodeRiskGauge(MetricRegistry& registry, std::string path, std::string node)
      : registry_(registry), path_(std::move(path)), node_(std::move(node)) {}
  void Update(int64_t now) {
    if (path_.empty()) return;
    struct stat st;
    if (::stat(path_.c_str(), &st) == 0 &&
        st.st_mtim.tv_sec * kNsPerSecond + st.st_mtim.tv_nsec != mtime_ns_) {
      mtime_ns_ = st.st_mtim.tv_sec * kNsPerSecond + st.st_mtim.tv_nsec;
      auto table = predict::NodeRiskTable::Read(path_);
      if (!table.ok()) {
        Log(LogLevel::kWarning, "agent", "--risk: {} (keeping the last value)",
            table.status().message());
      } else if (!table->Has(node_)) {
        Log(LogLevel::kWarning, "agent", "--risk: {} does not name node {} (--node-name)", path_,
            node_);
      } else {
        p_ = table->P(node_);
        series_ = registry_.GetOrCreate(kFailureProbability,
                                        {fmt::format("{:g}", table->horizon_seconds() / 86400)},
                                        kNsPerSecond);
      }
    }
    if (series_ != nullptr) series_->RecordGauge(now, p_);
  }

 private:
  MetricRegistry& registry_;
  std::string path_, node_;
  int64_t mtime_ns_ = -1;
  double p_ = 0;
  Series* series_ = nullptr;
};

const SignalDesc kDumpErrors{"titan_recorder_dump_errors_total",
                             "Automatic recorder dumps that could not be written.",
                             SignalKind::kCounter,
                             {},
                             {}};
const SignalDesc kDumpsSuppressed{
    "titan_recorder_dumps_suppressed_total",
    "Automatic recorder dumps not written, by reason (rate_limit: within --dump-min-interval of "
    "the previous one; queue_full: too many waiting).",
    SignalKind::kCounter,
    {"reason"},
    {}};
const SignalDesc kDumpsRemoved{"titan_recorder_dumps_removed_total",
                               "Old automatic recorder dumps removed (--dump-keep, --dump-max-mb).",
                               SignalKind::kCounter,
                               {},
                               {}};
const SignalDesc kDumps{"titan_recorder_dumps_total",
                        "Automatic recorder dumps written.",
                        SignalKind::kCounter,
                        {},
                        {}};

}  // namespace

Agent::Agent(const AgentOptions& options)
    : options_(options), env_(options.proc_root, options.sys_root) {}

Agent::~Agent() { Stop(); }

Result<std::unique_ptr<Agent>> Agent::Start(const AgentOptions& options) {
  std::unique_ptr<Agent> agent(new Agent(options));
  TITAN_RETURN_IF_ERROR(agent->Init());
  return agent;
}

Status Agent::Init() {
  DetectorRules rules(options_.detect_all);
  for (const std::string& rule : options_.detect_rules) TITAN_RETURN_IF_ERROR(rules.Add(rule));
  if (options_.window_seconds < 1 || options_.window_seconds > Series::kMaxWindowSeconds) {
    return InvalidArgumentError(fmt::format("--window {}: expected 1..{} seconds",
                                            options_.window_seconds, Series::kMaxWindowSeconds));
  }
  if (!options_.dump_dir.empty()) {
    TITAN_RETURN_IF_ERROR(DumpDirectory::CheckWritable(options_.dump_dir));
    if (options_.dump_keep < 1 || options_.dump_max_bytes < (1 << 20) ||
        options_.dump_min_interval_ns < 0) {
      return InvalidArgumentError(
          "--dump-keep must be >= 1, --dump-max-mb >= 1 and --dump-min-interval >= 0");
    }
    dump_dir_ = std::make_unique<DumpDirectory>(
        DumpDirectoryOptions{options_.dump_dir, options_.dump_min_interval_ns, options_.dump_keep,
                             options_.dump_max_bytes});
  }

  RegistryOptions registry_options;
  registry_options.recorder_duration_ns = options_.recorder_duration_ns;
  registry_options.recorder_budget_bytes = options_.recorder_budget_bytes;
  registry_options.max_series = options_.max_series;
  registry_ = std::make_unique<MetricRegistry>(registry_options);
  event_log_ = std::make_unique<EventLog>(10'000, 1 << 20);
  transients_ = std::make_unique<TransientPipeline>(*registry_, *event_log_,
                                                    options_.max_transients_per_second);
  transients_->AttachTo(rules);
  transients_->SetListener([this](const TransientEvent& e) { OnTransient(e); });
  step_tracker_ = std::make_unique<StepTracker>(*registry_, processes_);

  // HTTP first: an occupied port is the most common start-up error and should be the first said.
  TITAN_ASSIGN_OR_RETURN(http_, HttpServer::Start(this, options_.listen_address, options_.port));

  if (!options_.socket_path.empty()) {
    EventReceiverOptions receiver_options;
    receiver_options.socket_path = options_.socket_path;
    receiver_options.raise_max_dgram_qlen_to = options_.raise_dgram_queue_to;
    receiver_options.on_event = [this](const wire::ParsedEvent& e) {
      const AppEvent app = ToAppEvent(e);
      event_log_->AddAppEvent(app);
      step_tracker_->OnEvent(app, MonoNowNs());
    };
    auto receiver = EventReceiver::Start(std::move(receiver_options));
    if (!receiver.ok()) {
      http_->Stop();
      return receiver.status().WithContext("event socket (--socket)");
    }
    receiver_ = std::move(*receiver);
  }

  CollectorContext context;
  context.env = &env_;
  context.registry = registry_.get();
  context.processes = &processes_;
  auto rate_limited = std::make_shared<RateLimitedLog>(10 * kNsPerSecond);
  context.invalid_sample = [this, rate_limited](std::string_view collector, std::string_view what) {
    if (Series* s = registry_->GetOrCreate(kInvalidSamples, {std::string(collector)}, 0)) {
      s->AddCounter(WallNowNs(), 1);
    }
    rate_limited->Log(LogLevel::kWarning, "agent", "collector {} rejected a reading: {}", collector,
                      what);
  };
  std::vector<CollectorSpec> specs;
  auto interval_for = [this](std::string_view name, int64_t default_ns) {
    auto it = options_.intervals.find(std::string(name));
    if (it != options_.intervals.end()) return it->second;
    return options_.interval_ns > 0 ? options_.interval_ns : default_ns;
  };
  auto disabled = [this](std::string_view name) {
    for (const std::string& d : options_.disabled_collectors) {
      if (d == name) return true;
    }
    return false;
  };
  for (const CollectorInfo& info : AllCollectors()) {
    // NVML is built below: it takes --nvml-library.
    if (disabled(info.name) || info.name == "nvml") continue;
    specs.push_back({info.make(), interval_for(info.name, info.default_interval_ns)});
  }
  if (!disabled("nvml")) {
    specs.push_back({options_.nvml_library.empty() ? MakeNvmlCollector()
                                                   : MakeNvmlCollector(options_.nvml_library),
                     interval_for("nvml", 100 * kNsPerMs)});
  }
  sampler_ = std::make_unique<Sampler>(context);
  sampler_->Start(std::move(specs));

  housekeeping_ = std::thread([this] { Housekeeping(); });
  Log(LogLevel::kInfo, "agent", "serving http://{}:{}/metrics, events on {}",
      options_.listen_address, http_->port(),
      options_.socket_path.empty() ? "(off)" : options_.socket_path);
  return OkStatus();
}

void Agent::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (housekeeping_.joinable()) housekeeping_.join();
  if (http_) http_->Stop();
  if (receiver_) receiver_->Stop();
  if (sampler_) sampler_->Stop();
}

int Agent::port() const { return http_ ? http_->port() : 0; }

std::string Agent::RenderMetrics(bool open_metrics, int window_seconds) const {
  std::string out;
  out.reserve(256 << 10);
  ExpositionOptions options;
  options.format =
      open_metrics ? ExpositionFormat::kOpenMetrics : ExpositionFormat::kPrometheusText;
  options.window_seconds = window_seconds;
  options.now_ns = WallNowNs();
  RenderExposition(*registry_, options, &out);
  return out;
}

void Agent::OnTransient(const TransientEvent& event) {
  if (dump_dir_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t now = MonoNowNs();
  if (pending_dumps_.size() >= 64) {  // bounded; with the rate limit below it stays near empty
    ++dumps_queue_full_;
  } else if (!dump_dir_->Admit(now)) {
    ++dumps_rate_limited_;
  } else {
    pending_dumps_.emplace_back(now + options_.dump_after_ns, event);
  }
}

void Agent::Housekeeping() {
  Series* series_count = registry_->GetOrCreate(kSeriesCount, {}, kNsPerSecond);
  Series* recorder_bytes = registry_->GetOrCreate(kRecorderBytes, {}, kNsPerSecond);
  Series* series_dropped = registry_->GetOrCreate(kSeriesDropped, {}, 0);
  Series* received = registry_->GetOrCreate(kEventsReceived, {}, 0);
  Series* dumps = registry_->GetOrCreate(kDumps, {}, 0);
  Series* dump_errors = registry_->GetOrCreate(kDumpErrors, {}, 0);
  Series* dumps_removed = registry_->GetOrCreate(kDumpsRemoved, {}, 0);
  Series* dumps_rate_limited = registry_->GetOrCreate(kDumpsSuppressed, {"rate_limit"}, 0);
  Series* dumps_queue_full = registry_->GetOrCreate(kDumpsSuppressed, {"queue_full"}, 0);
  std::vector<Series*> rejected(wire::kRejectReasonCount, nullptr);
  for (size_t r = 0; r < wire::kRejectReasonCount; ++r) {
    rejected[r] = registry_->GetOrCreate(
        kEventsRejected, {std::string(wire::RejectReasonName(static_cast<wire::RejectReason>(r)))},
        0);
  }
  NodeRiskGauge risk(*registry_, options_.risk_file, options_.node_name);
  RateLimitedLog dump_log(60 * kNsPerSecond);
  RateLimitedLog series_log(60 * kNsPerSecond);
  uint64_t series_dropped_seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (stop_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) return;
    std::vector<TransientEvent> due;
    const int64_t mono = MonoNowNs();
    std::erase_if(pending_dumps_, [&](auto& pending) {
      if (pending.first > mono) return false;
      due.push_back(std::move(pending.second));
      return true;
    });
    const double rate_limited = static_cast<double>(dumps_rate_limited_);
    const double queue_full = static_cast<double>(dumps_queue_full_);
    lock.unlock();

    const int64_t now = WallNowNs();
    sampler_->RecordUp(now);
    risk.Update(now);
    series_count->RecordGauge(now, static_cast<double>(registry_->series_count()));
    recorder_bytes->RecordGauge(now, static_cast<double>(registry_->recorder_bytes()));
    const uint64_t dropped = registry_->dropped_series();
    series_dropped->SetCounter(now, static_cast<double>(dropped));
    if (dropped > series_dropped_seen) {
      series_log.Log(LogLevel::kWarning, "agent",
                     "{} new series not created: the agent keeps {} (--max-series {}); see "
                     "titan_agent_series_dropped_total",
                     dropped - series_dropped_seen, registry_->series_count(), options_.max_series);
      series_dropped_seen = dropped;
    }
    if (dump_dir_ != nullptr) {
      dumps_rate_limited->SetCounter(now, rate_limited);
      dumps_queue_full->SetCounter(now, queue_full);
    }
    if (receiver_) {
      const EventReceiverStats stats = receiver_->Stats();
      received->SetCounter(now, static_cast<double>(stats.accepted));
      for (size_t r = 0; r < wire::kRejectReasonCount; ++r) {
        if (rejected[r]) rejected[r]->SetCounter(now, static_cast<double>(stats.rejected[r]));
      }
    }
    for (const TransientEvent& event : due) {
      DumpRequest request{event.detection.start_ns - options_.dump_before_ns,
                          event.detection.end_ns + options_.dump_after_ns, ""};
      const std::string path = dump_dir_->PathFor(event.id, event.detection.start_ns);
      Status written = WritePerfettoDump(*registry_, *event_log_, request, path);
      if (written.ok()) {
        dumps->AddCounter(now, 1);
        Log(LogLevel::kInfo, "agent", "transient {} recorded in {}", event.id, path);
      } else {
        dump_errors->AddCounter(now, 1);
        dump_log.Log(LogLevel::kWarning, "agent", "{}", written.ToString());
      }
      DumpPruneResult removed;
      Status pruned = dump_dir_->Prune(&removed);
      if (removed.files > 0) {
        dumps_removed->AddCounter(now, static_cast<double>(removed.files));
        Log(LogLevel::kDebug, "agent", "removed {} old dump(s), {} bytes ({} kept at most)",
            removed.files, removed.bytes, options_.dump_keep);
      }
      if (!pruned.ok()) dump_log.Log(LogLevel::kWarning, "agent", "{}", pruned.ToString());
    }
    lock.lock();
  }
}

}  // namespace titan
