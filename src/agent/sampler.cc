#include "src/agent/sampler.h"

#include <algorithm>
#include <chrono>

#include "src/base/clock.h"
#include "src/base/log.h"

namespace titan {
namespace {

const SignalDesc kUp{"titan_collector_up",
                     "1 when the collector samples, 0 when its source is unavailable, stuck, or "
                     "failed its last 3 Collect() calls.",
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

const SignalDesc kStuck{"titan_collector_stuck_total",
                        "Times a Collect() call stayed inside its source past the stuck bound "
                        "(max of 10 intervals and 5 s).",
                        SignalKind::kCounter,
                        {"collector"},
                        {}};

}  // namespace

Sampler::Sampler(CollectorContext base_context, SamplerOptions options)
    : base_context_(std::move(base_context)), options_(options) {}

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
      slot->stuck = registry.GetOrCreate(kStuck, {name}, 0);
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
  const int64_t now = MonoNowNs();
  for (auto& slot : slots_) {
    if (!slot->thread.joinable()) continue;
    if (StuckForNs(*slot, now) > 0) {
      Log(LogLevel::kWarning, "agent",
          "collector {} is still stuck in Collect(); not waiting for it", slot->status.name);
      slot->thread.detach();
      (void)slot.release();  // the detached thread may still use it
      continue;
    }
    slot->thread.join();
  }
  std::erase(slots_, nullptr);
}

int64_t Sampler::StuckForNs(const Slot& slot, int64_t mono_now_ns) const {
  const int64_t begin = slot.collect_begin_ns.load(std::memory_order_acquire);
  if (begin == 0) return 0;
  const int64_t bound = std::max(10 * slot.spec.interval_ns, options_.stuck_after_min_ns);
  const int64_t inside = mono_now_ns - begin;
  return inside > bound ? inside : 0;
}

void Sampler::Loop(Slot* slot) {
  RateLimitedLog error_log(10 * kNsPerSecond);
  const int64_t interval = slot->spec.interval_ns;
  int64_t next = MonoNowNs();
  for (;;) {
    const int64_t begin = MonoNowNs();
    const int64_t wall = WallNowNs();
    slot->collect_begin_ns.store(begin, std::memory_order_release);
    Status status = slot->spec.collector->Collect(wall);
    slot->collect_begin_ns.store(0, std::memory_order_release);
    const int64_t took = MonoNowNs() - begin;
    slot->rounds.fetch_add(1, std::memory_order_relaxed);
    slot->duration->RecordGauge(wall, NsToSeconds(took));
    if (status.ok()) {
      slot->consecutive_errors.store(0, std::memory_order_relaxed);
    } else {
      slot->consecutive_errors.fetch_add(1, std::memory_order_relaxed);
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
    s.consecutive_errors = slot->consecutive_errors.load();
    s.stuck_seconds = NsToSeconds(StuckForNs(*slot, MonoNowNs()));
    out.push_back(std::move(s));
  }
  return out;
}

void Sampler::RecordUp(int64_t now_ns) {
  const int64_t mono = MonoNowNs();
  for (auto& slot : slots_) {
    const int64_t stuck_for = slot->status.running ? StuckForNs(*slot, mono) : 0;
    if (stuck_for > 0 && !slot->reported_stuck) {
      slot->reported_stuck = true;
      slot->stuck->AddCounter(now_ns, 1);
      Log(LogLevel::kWarning, "agent",
          "collector {} has been inside one Collect() for {:.1f} s (interval {} ms): its source "
          "is stuck (e.g. a GPU driver call on a GPU that fell off the bus); its series go stale, "
          "the other collectors run on",
          slot->status.name, NsToSeconds(stuck_for), slot->spec.interval_ns / 1'000'000);
    } else if (stuck_for == 0 && slot->reported_stuck) {
      slot->reported_stuck = false;
      Log(LogLevel::kInfo, "agent", "collector {} is sampling again", slot->status.name);
    }
    const uint64_t failures = slot->consecutive_errors.load(std::memory_order_relaxed);
    const bool failing = failures >= kDownAfterFailures;
    if (failing && !slot->reported_failing) {
      Log(LogLevel::kWarning, "agent",
          "collector {} failed its last {} Collect() calls: reported down until one succeeds",
          slot->status.name, failures);
    } else if (!failing && slot->reported_failing) {
      Log(LogLevel::kInfo, "agent", "collector {} collects again", slot->status.name);
    }
    slot->reported_failing = failing;
    if (slot->up) {
      slot->up->RecordGauge(now_ns, slot->status.running && stuck_for == 0 && !failing ? 1 : 0);
    }
  }
}

}  // namespace titan
