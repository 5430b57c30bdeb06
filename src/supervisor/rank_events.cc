#include "src/supervisor/rank_events.h"

#include <signal.h>

#include <algorithm>

#include "src/base/clock.h"

namespace titan::supervisor {
namespace {

constexpr int64_t kTickNs = 20 * kNsPerMs;
constexpr int64_t kSlowPeriodNs = 20 * kNsPerMs;

}  // namespace

void RankEvents::StartGeneration(const Assignment& a, int64_t gen_wall_start_ns, int64_t now) {
  gen_wall_start_ns_ = gen_wall_start_ns;
  lead_rank_ = a.rank_offset;
  ranks_.clear();
  std::vector<int> ranks;
  for (const Worker& w : host_.workers()) {
    ranks.push_back(w.rank);
    ranks_[w.rank] = RankState{};
  }
  hang_.Reset(ranks, now);
  straggler_.Reset();
  injector_.Arm(a.group_rank, a.nnodes, a.rank_offset, o_.nproc_per_node, a.world_size);
}

const Worker* RankEvents::WorkerByRank(int rank) {
  for (const Worker& w : host_.workers()) {
    if (w.rank == rank) return &w;
  }
  return nullptr;
}

int RankEvents::RankOfPid(int32_t pid) {
  for (const Worker& w : host_.workers()) {
    if (w.pid == pid) return w.rank;
  }
  return -1;
}

int64_t RankEvents::NextWakeNs(int64_t now) const {
  int64_t wake = kTickNs;
  for (const auto& [rank, s] : ranks_) {
    if (s.slow_factor > 0) {
      wake = std::min(wake, std::max<int64_t>(s.slow_next_toggle_ns - now, kNsPerMs));
    }
  }
  return std::max<int64_t>(wake, kNsPerMs);
}

void RankEvents::Handle(const wire::ParsedEvent& e, int64_t now) {
  int rank = RankOfPid(e.pid());
  if (rank < 0 && ranks_.count(e.rank) && e.time_ns >= gen_wall_start_ns_) rank = e.rank;
  if (rank < 0) return;  // not ours (a previous generation): ignored
  RankState& rs = ranks_[rank];
  const bool lead = rank == lead_rank_;
  switch (e.kind) {
    case wire::EventKind::kStepBegin: {
      hang_.OnProgress(rank, now);
      rs.step = e.step;
      rs.step_begin_time_ns = e.time_ns;
      rs.marked = false;
      if (lead && ledger_.phase() != Phase::kProductive) ledger_.Enter(Phase::kProductive, now);
      if (rs.slow_factor > 0 && rs.slow_until_step >= 0 && e.step >= rs.slow_until_step) {
        StopSlow(rank);
      }
      for (const Injector::Action& act : injector_.OnStep(rank, e.step)) Apply(act, now);
      break;
    }
    case wire::EventKind::kMark:
      if (!rs.marked && rs.step_begin_time_ns > 0 && e.time_ns >= rs.step_begin_time_ns) {
        straggler_.Add(rank, e.time_ns - rs.step_begin_time_ns);
        steps_.AddCompute(rank, e.time_ns - rs.step_begin_time_ns, now);
        rs.marked = true;
      }
      hang_.OnProgress(rank, now);
      break;
    case wire::EventKind::kStepEnd:
      hang_.OnStepEnd(rank, e.step, now);
      if (rs.step_begin_time_ns > 0 && e.time_ns >= rs.step_begin_time_ns) {
        if (!rs.marked) straggler_.Add(rank, e.time_ns - rs.step_begin_time_ns);
        steps_.Add(rank, e.step, e.time_ns - rs.step_begin_time_ns, now);
      }
      if (lead) ledger_.OnStep(e.step);
      break;
    case wire::EventKind::kCheckpointBegin:
      hang_.OnCheckpointBegin(rank, now);
      if (lead) {
        ledger_.Enter(Phase::kCheckpoint, now);
        checkpoint_begin_ns_ = now;
      }
      break;
    case wire::EventKind::kCheckpointEnd:
      hang_.OnProgress(rank, now);
      if (lead) {
        const bool staged = e.name() == wire::kStagedTag;
        if (staged) {
          ledger_.OnCheckpointStaged(e.step, now);
          staged_ns_ = now;
        } else {
          ledger_.OnCheckpointSaved(e.step, now);
        }
        ledger_.Enter(Phase::kProductive, now);
        log_.Write(
            "checkpoint",
            {{"step", e.step},
             {"bytes", e.value},
             {"async", staged},
             {"blocking_ms", checkpoint_begin_ns_ > 0 ? (now - checkpoint_begin_ns_) / 1e6 : 0.0}});
        checkpoint_begin_ns_ = 0;
      }
      break;
    case wire::EventKind::kCheckpointCommitted:
      if (lead) {
        ledger_.OnCheckpointCommitted(e.step, now);
        log_.Write("checkpoint_committed",
                   {{"step", e.step},
                    {"written_bytes", e.value},
                    {"background_ms", staged_ns_ > 0 ? (now - staged_ns_) / 1e6 : 0.0}});
        staged_ns_ = 0;
      }
      break;
    case wire::EventKind::kCheckpointDurable:
      if (lead) {
        ledger_.OnCheckpointDurable(e.step);
        log_.Write("checkpoint_durable", {{"step", e.step}, {"copied_bytes", e.value}});
      }
      break;
    case wire::EventKind::kHeartbeat:
      hang_.OnProgress(rank, now);
      break;
    default:
      break;
  }
}

void RankEvents::InjectByTime(double run_s, int64_t now) {
  for (const Injector::Action& act : injector_.OnTime(run_s)) Apply(act, now);
}

void RankEvents::Apply(const Injector::Action& act, int64_t now) {
  const Injection& inj = injector_.injections()[act.index];
  const Worker* w = WorkerByRank(act.rank);
  log_.Write("inject", {{"kind", std::string(InjectKindName(act.kind))},
                        {"rank", act.rank},
                        {"step", ranks_.count(act.rank) ? ranks_[act.rank].step : -1},
                        {"spec", inj.text},
                        {"pid", w ? w->pid : -1}});
  // The whole node disappears: its workers die and its lease is no longer refreshed.
  if (act.kind == InjectKind::kNodeLoss) host_.ExitAsLostNode();
  if (w == nullptr || !w->running) return;
  RankState& rs = ranks_[act.rank];
  rs.inject_mono_ns = now;
  rs.inject_kind = std::string(InjectKindName(act.kind));
  switch (act.kind) {
    case InjectKind::kCrash:
      host_.Signal(w->pid, SIGKILL);
      break;
    case InjectKind::kHang:
      host_.Signal(w->pid, SIGSTOP);
      break;
    case InjectKind::kSlow:
      rs.slow_factor = act.factor;
      rs.slow_until_step = act.steps > 0 ? rs.step + act.steps : -1;
      rs.slow_stopped = false;
      rs.slow_next_toggle_ns = now + static_cast<int64_t>(kSlowPeriodNs / act.factor);
      break;
    default:
      break;
  }
}

// A slowed worker runs 1/factor of each 20 ms period and is stopped for the rest.
void RankEvents::DriveSlow(int64_t now) {
  for (auto& [rank, rs] : ranks_) {
    if (rs.slow_factor <= 0 || now < rs.slow_next_toggle_ns) continue;
    const Worker* w = WorkerByRank(rank);
    if (w == nullptr || !w->running) continue;
    int64_t run_ns = static_cast<int64_t>(kSlowPeriodNs / rs.slow_factor);
    if (rs.slow_stopped) {
      host_.Signal(w->pid, SIGCONT);
      rs.slow_stopped = false;
      rs.slow_next_toggle_ns = now + run_ns;
    } else {
      host_.Signal(w->pid, SIGSTOP);
      rs.slow_stopped = true;
      rs.slow_next_toggle_ns = now + (kSlowPeriodNs - run_ns);
    }
  }
}

void RankEvents::StopSlow(int rank) {
  RankState& rs = ranks_[rank];
  if (const Worker* w = WorkerByRank(rank); w != nullptr && rs.slow_stopped) {
    host_.Signal(w->pid, SIGCONT);
  }
  rs.slow_factor = 0;
  rs.slow_stopped = false;
  log_.Write("inject", {{"kind", "slow-end"}, {"rank", rank}});
}

void RankEvents::ForgetSlow() {
  for (auto& [rank, rs] : ranks_) rs.slow_factor = 0;
}

}  // namespace titan::supervisor
