#include "src/sim/engine.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "src/base/check.h"
#include "src/sim/policies.h"
#include "src/sim/random.h"

namespace titan::sim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

enum class Phase { kCompute, kCheckpoint, kDetect, kWait, kRestart, kDone };
enum class NodeState : uint8_t { kActive, kSpare, kRepair };

struct Event {
  double time;
  int32_t node;
  int32_t clock;   // failure clock, or kRepairDone
  uint32_t epoch;  // the node's epoch when scheduled; stale failure events are skipped
  bool operator>(const Event& other) const { return time > other.time; }
};
constexpr int32_t kRepairDone = -1;

class Replica {
 public:
  Replica(const EngineModel& model, uint64_t seed, uint64_t index) : m_(model), rng_(seed, index) {}

  ReplicaResult Run() {
    result_.failures_by_cause.assign(m_.causes.size(), 0);
    const int64_t total = m_.nodes + m_.spares;
    state_.assign(total, NodeState::kSpare);
    epoch_.assign(total, 0);
    std::fill(state_.begin(), state_.begin() + m_.nodes, NodeState::kActive);
    active_ = m_.nodes;
    spare_count_ = m_.spares;
    for (int64_t n = total - 1; n >= m_.nodes; --n) spare_stack_.push_back(static_cast<int32_t>(n));
    heap_.reserve(total * m_.clocks.clock_count());
    for (int64_t n = 0; n < total; ++n) {
      for (int c = 0; c < m_.clocks.clock_count(); ++c) {
        const double delay = m_.clocks.DrawInitial(c, rng_);
        if (std::isfinite(delay)) heap_.push_back({delay, static_cast<int32_t>(n), c, 0});
      }
    }
    std::make_heap(heap_.begin(), heap_.end(), std::greater<Event>());

    for (int64_t events = 0;; ++events) {
      const double next = heap_.empty() ? kInfinity : heap_.front().time;
      AdvanceTo(std::min(next, m_.horizon_seconds));
      if (phase_ == Phase::kDone || t_ >= m_.horizon_seconds) break;
      if (events == m_.max_events) {
        result_.cascaded = true;
        break;
      }
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<Event>());
      const Event event = heap_.back();
      heap_.pop_back();
      if (event.clock == kRepairDone) {
        OnRepair(event.node);
      } else if (event.epoch == epoch_[event.node]) {
        OnFailure(event);
      }
    }
    result_.wall_seconds = t_;
    result_.work_seconds = progress_;
    result_.finished = phase_ == Phase::kDone;
    return std::move(result_);
  }

 private:
  void Accrue(Category category, double seconds) { result_.ledger[category] += seconds; }

  void Schedule(int32_t node, int clock) {
    const double delay = m_.clocks.Draw(clock, rng_);
    if (!std::isfinite(delay)) return;
    heap_.push_back({t_ + delay, node, clock, epoch_[node]});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<Event>());
  }

  // Advances the job (no failure happens before `target`).
  void AdvanceTo(double target) {
    while (phase_ != Phase::kDone) {
      switch (phase_) {
        case Phase::kCompute: {
          if (t_ >= target) return;
          const double to_checkpoint = (m_.interval_seconds - segment_work_) / rate_;
          const double to_finish =
              m_.work_seconds > 0 ? (m_.work_seconds - progress_) / rate_ : kInfinity;
          const double dt = std::min(to_checkpoint, to_finish);
          if (t_ + dt > target) {
            Work(target - t_);
            t_ = target;
            return;
          }
          Work(dt);
          t_ += dt;
          if (to_finish <= to_checkpoint) {
            progress_ = m_.work_seconds;
            phase_ = Phase::kDone;
            return;
          }
          StartCheckpoint();
          break;
        }
        case Phase::kWait:
          if (t_ < target) {
            Accrue(Category::kWaiting, target - t_);
            t_ = target;
          }
          return;
        default: {
          const Category category = phase_ == Phase::kCheckpoint ? Category::kCheckpoint
                                    : phase_ == Phase::kDetect   ? Category::kDetection
                                                                 : Category::kRestart;
          if (phase_end_ > target) {
            Accrue(category, target - t_);
            t_ = target;
            return;
          }
          Accrue(category, phase_end_ - t_);
          t_ = phase_end_;
          if (phase_ == Phase::kCheckpoint) {
            EndCheckpoint();
          } else if (phase_ == Phase::kDetect) {
            EndDetection();
          } else {
            phase_ = Phase::kCompute;
            segment_work_ = 0;
            rate_ = Rate();
          }
        }
      }
    }
  }

  void Work(double seconds) {
    progress_ += rate_ * seconds;
    segment_work_ += rate_ * seconds;
    Accrue(Category::kProductive, rate_ * seconds);
    Accrue(Category::kDegraded, (1.0 - rate_) * seconds);
  }

  void StartCheckpoint() {
    checkpoint_progress_ = progress_;
    phase_ = Phase::kCheckpoint;
    phase_end_ = t_ + CheckpointBlockingSeconds(m_.checkpoint, checkpoint_index_);
  }

  void EndCheckpoint() {
    const double delay = PersistDelaySeconds(m_.checkpoint, checkpoint_index_);
    if (m_.checkpoint.mode == CheckpointMode::kInMemory) memory_ = checkpoint_progress_;
    if (delay == 0) {
      durable_ = checkpoint_progress_;
    } else if (delay > 0) {
      persists_.push_back({t_ + delay, checkpoint_progress_});
    }
    FlushPersists();
    ++checkpoint_index_;
    ++result_.checkpoints;
    segment_work_ = 0;
    if (active_ < m_.nodes) {  // nodes back from repair rejoin a shrunk job here
      TopUp();
      rate_ = Rate();
    }
    phase_ = Phase::kCompute;
  }

  void FlushPersists() {
    while (!persists_.empty() && persists_.front().first <= t_) {
      durable_ = std::max(durable_, persists_.front().second);
      persists_.pop_front();
    }
  }

  void Rollback() {
    FlushPersists();
    double restore = durable_;
    restore_from_memory_ = false;
    if (m_.checkpoint.mode == CheckpointMode::kInMemory && memory_ > durable_ &&
        rng_.UniformOpenZero() <= m_.checkpoint.memory_survival) {
      restore = memory_;
      restore_from_memory_ = true;
    }
    const double lost = progress_ - restore;
    Accrue(Category::kProductive, -lost);
    Accrue(Category::kLostWork, lost);
    progress_ = restore;
    memory_ = restore;
    persists_.clear();
    segment_work_ = 0;
  }

  void OnFailure(const Event& event) {
    const int cause_index = m_.clocks.PickCause(event.clock, rng_);
    const FailureCause& cause = m_.causes[cause_index];
    const int32_t node = event.node;
    if (state_[node] == NodeState::kSpare) {
      if (cause.needs_repair) {
        --spare_count_;
        SendToRepair(node);
      } else {
        Schedule(node, event.clock);  // software faults need a running job
      }
      return;
    }
    TITAN_CHECK(state_[node] == NodeState::kActive) << "node " << node;
    ++result_.failures_by_cause[cause_index];
    ++result_.interruptions;
    if (phase_ == Phase::kCompute || phase_ == Phase::kCheckpoint) Rollback();
    if (phase_ != Phase::kWait) {
      phase_ = Phase::kDetect;
      phase_end_ = t_ + (cause.detection_seconds >= 0 ? cause.detection_seconds
                                                      : m_.recovery.detection_seconds);
    }
    if (cause.needs_repair) {
      --active_;
      SendToRepair(node);
    } else {
      Schedule(node, event.clock);
    }
  }

  void SendToRepair(int32_t node) {
    state_[node] = NodeState::kRepair;
    ++epoch_[node];
    heap_.push_back(
        {t_ + rng_.Exponential(1.0 / m_.repair_seconds), node, kRepairDone, epoch_[node]});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<Event>());
  }

  void OnRepair(int32_t node) {
    state_[node] = NodeState::kSpare;
    ++spare_count_;
    spare_stack_.push_back(node);
    for (int c = 0; c < m_.clocks.clock_count(); ++c) Schedule(node, c);  // new parts
    if (phase_ == Phase::kWait) {
      TopUp();
      if (EnoughToRun()) StartRestart();
    }
  }

  void EndDetection() {
    TopUp();
    if (EnoughToRun()) {
      StartRestart();
    } else {
      phase_ = Phase::kWait;
    }
  }

  void StartRestart() {
    phase_ = Phase::kRestart;
    phase_end_ =
        t_ + m_.recovery.restart_seconds +
        (restore_from_memory_ ? m_.checkpoint.memory_load_seconds : m_.checkpoint.load_seconds);
  }

  void TopUp() {
    while (active_ < m_.nodes && spare_count_ > 0) {
      TITAN_CHECK(!spare_stack_.empty()) << spare_count_ << " spares counted";
      const int32_t node = spare_stack_.back();
      spare_stack_.pop_back();
      if (state_[node] != NodeState::kSpare) continue;  // stale: it failed while spare
      state_[node] = NodeState::kActive;
      ++active_;
      --spare_count_;
    }
  }

  int64_t ActiveReplicas() const {
    return std::min<int64_t>(m_.replicas_total,
                             static_cast<int64_t>(std::floor(
                                 static_cast<double>(active_) * m_.replicas_per_node + 1e-9)));
  }

  bool EnoughToRun() const {
    if (m_.recovery.policy != RecoveryPolicy::kShrink) return active_ >= m_.nodes;
    const double needed =
        std::max(1.0, std::ceil(m_.recovery.min_fraction * m_.replicas_total - 1e-9));
    return static_cast<double>(ActiveReplicas()) >= needed;
  }

  double Rate() const {
    return static_cast<double>(ActiveReplicas()) / static_cast<double>(m_.replicas_total);
  }

  const EngineModel& m_;
  Rng rng_;
  std::vector<Event> heap_;
  std::vector<NodeState> state_;
  std::vector<uint32_t> epoch_;
  std::vector<int32_t> spare_stack_;  // may hold stale entries (checked on pop)
  int64_t active_ = 0;
  int64_t spare_count_ = 0;
  Phase phase_ = Phase::kCompute;
  double t_ = 0;
  double phase_end_ = 0;
  double rate_ = 1;
  double progress_ = 0;
  double segment_work_ = 0;
  double checkpoint_progress_ = 0;
  double durable_ = 0;
  double memory_ = 0;
  bool restore_from_memory_ = false;
  int64_t checkpoint_index_ = 0;
  std::deque<std::pair<double, double>> persists_;  // (durable at, progress)
  ReplicaResult result_;
};

}  // namespace

EngineModel MakeEngineModel(const Scenario& scenario, double interval_seconds,
                            double step_seconds) {
  EngineModel m;
  m.nodes = scenario.cluster.nodes();
  m.spares = scenario.cluster.spares;
  const int64_t model_parallel = scenario.job.tensor_parallel * scenario.job.pipeline_parallel;
  m.replicas_total = scenario.cluster.gpus / model_parallel;
  m.replicas_per_node =
      static_cast<double>(scenario.cluster.gpus_per_node) / static_cast<double>(model_parallel);
  m.repair_seconds = scenario.cluster.repair_seconds;
  m.causes = scenario.causes;
  m.clocks = FailureClocks(scenario.causes);
  m.checkpoint = scenario.checkpoint;
  m.recovery = scenario.recovery;
  m.interval_seconds = interval_seconds;
  m.work_seconds =
      scenario.job.steps > 0 ? static_cast<double>(scenario.job.steps) * step_seconds : 0;
  m.horizon_seconds =
      scenario.job.steps > 0 ? scenario.run.max_seconds : scenario.run.duration_seconds;
  return m;
}

ReplicaResult RunReplica(const EngineModel& model, uint64_t seed, uint64_t index) {
  return Replica(model, seed, index).Run();
}

Result<std::vector<ReplicaResult>> RunReplicas(const EngineModel& model, uint64_t seed,
                                               int64_t count, int64_t threads) {
  std::vector<ReplicaResult> results(count);
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, count);
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> cascaded{-1};  // the first replica that did
  auto worker = [&] {
    for (int64_t i = next++; i < count && cascaded.load() < 0; i = next++) {
      results[i] = RunReplica(model, seed, i);
      int64_t none = -1;
      if (results[i].cascaded) cascaded.compare_exchange_strong(none, i);
    }
  };
  std::vector<std::thread> pool;
  for (int64_t i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& thread : pool) thread.join();
  if (cascaded.load() >= 0) {
    return FailedPreconditionError(fmt::format(
        "replica {}: more than {:g} failure and repair events before the horizon: the failures "
        "cascade (with failures.weibull_shape below 1, a node back from a short repair is new "
        "and fails again almost at once); raise cluster.repair_hours or failures.weibull_shape, "
        "or shorten the horizon (run.duration_days / run.max_days)",
        cascaded.load(), static_cast<double>(model.max_events)));
  }
  return results;
}

}  // namespace titan::sim
