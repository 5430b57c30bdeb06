#include "src/agent/sampler.h"

#include <chrono>

#include "src/base/clock.h"
#include "src/base/log.h"

namespace titan {
namespace {

const SignalDesc kUp{"titan_collector_up",
                     "1 when the collector samples, 0 when its source is unavailable.",
                     SignalKind::kGauge,
                     {"collector"},
                     {}};
const SignalDesc kDuration{"titan_collector_duration_seconds",
                           "Time one Collect() of the collector took.",
                           SignalKind::kGauge,
                           {"collector"},
                           {}};
const SignalDesc kErrors{"titan_collector_errors_total",
                         "Collect() calls that failed.",
                         SignalKind::kCounter,
                         {"collector"},
                         {}};
const SignalDesc kOverruns{"titan_collector_overruns_total",
                           "Sampling ticks skipped because Collect() outlasted its interval.",
                           SignalKind::kCounter,
                           {"collector"},
                           {}};

}  // namespace

Sampler::Sampler(CollectorContext base_context) : base_context_(std::move(base_context)) {}

Sampler::~Sampler() { Stop(); }

void Sampler::Start(std::vector<CollectorSpec> specs) {
  MetricRegistry& registry = *base_context_.registry;
  for (CollectorSpec& spec : specs) {
    auto slot = std::make_unique<Slot>();
    const std::string name(spec.collector->name());
    slot->status.name = name;
    slot->status.interval_ns = spec.interval_ns;
    slot->up = registry.GetOrCreate(kUp, {name}, 0);
    CollectorContext context = base_context_;
    context.interval_ns = spec.interval_ns;
    Status init = spec.collector->Init(context);
    if (!init.ok()) {
      slot->status.init_error = init.ToString();
      Log(LogLevel::kWarning, "agent", "collector {} is off: {}", name, init.ToString());
    } else {
      slot->status.running = true;
      slot->duration = registry.GetOrCreate(kDuration, {name}, spec.interval_ns);
      slot->errors = registry.GetOrCreate(kErrors, {name}, 0);
      slot->overruns = registry.GetOrCreate(kOverruns, {name}, 0);
    }
    slot->spec = std::move(spec);
    slots_.push_back(std::move(slot));
  }
  RecordUp(WallNowNs());
  for (auto& slot : slots_) {
    if (slot->status.running) slot->thread = std::thread([this, s = slot.get()] { Loop(s); });
  }
}

void Sampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  for (auto& slot : slots_) {
    if (slot->thread.joinable()) slot->thread.join();
  }
}

void Sampler::Loop(Slot* slot) {
  RateLimitedLog error_log(10 * kNsPerSecond);
  const int64_t interval = slot->spec.interval_ns;
  int64_t next = MonoNowNs();
  for (;;) {
    const int64_t begin = MonoNowNs();
    const int64_t wall = WallNowNs();
    Status status = slot->spec.collector->Collect(wall);
    const int64_t took = MonoNowNs() - begin;
    slot->rounds.fetch_add(1, std::memory_order_relaxed);
    slot->duration->RecordGauge(wall, NsToSeconds(took));
    if (!status.ok()) {
      slot->error_count.fetch_add(1, std::memory_order_relaxed);
      slot->errors->AddCounter(wall, 1);
      error_log.Log(LogLevel::kWarning, "agent", "collector {}: {}", slot->status.name,
                    status.ToString());
    }
    next += interval;
    const int64_t now = MonoNowNs();
    if (next <= now) {
      const int64_t missed = (now - next) / interval + 1;
      slot->overruns->AddCounter(wall, static_cast<double>(missed));
      next += missed * interval;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    const auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(next));
    if (stop_cv_.wait_until(lock, deadline, [this] { return stop_; })) return;
  }
}

std::vector<CollectorStatus> Sampler::Statuses() const {
  std::vector<CollectorStatus> out;
  for (const auto& slot : slots_) {
    CollectorStatus s = slot->status;
    s.rounds = slot->rounds.load();
    s.errors = slot->error_count.load();
    out.push_back(std::move(s));
  }
  return out;
}

void Sampler::RecordUp(int64_t now_ns) {
  for (auto& slot : slots_) {
    if (slot->up) slot->up->RecordGauge(now_ns, slot->status.running ? 1 : 0);
  }
}

}  // namespace titan
