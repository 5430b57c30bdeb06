#include "src/supervisor/ledger.h"

#include <fmt/format.h>

#include <algorithm>

namespace titan::supervisor {

void GoodputLedger::Start(Phase phase, int64_t now_ns) {
  ns_.fill(0);
  start_ns_ = phase_start_ns_ = now_ns;
  phase_ = phase;
}

void GoodputLedger::Close(int64_t now_ns) {
  int64_t d = std::max<int64_t>(0, now_ns - phase_start_ns_);
  ns_[static_cast<int>(phase_)] += d;
  if (phase_ == Phase::kProductive) productive_since_checkpoint_ns_ += d;
  phase_start_ns_ = std::max(now_ns, phase_start_ns_);
}

void GoodputLedger::Enter(Phase phase, int64_t now_ns) {
  if (finished_) return;
  Close(now_ns);
  phase_ = phase;
}

void GoodputLedger::OnCheckpointSaved(int64_t step, int64_t now_ns) {
  if (phase_ == Phase::kProductive) Close(now_ns);
  productive_since_checkpoint_ns_ = 0;
  last_checkpoint_step_ = step;
}

void GoodputLedger::OnCheckpointStaged(int64_t step, int64_t now_ns) {
  if (phase_ == Phase::kProductive) Close(now_ns);
  staged_step_ = step;  // async saves run one at a time: a newer one replaces the older
  staged_covers_ns_ = productive_since_checkpoint_ns_;
}

void GoodputLedger::OnCheckpointCommitted(int64_t step, int64_t now_ns) {
  if (step != staged_step_) return OnCheckpointSaved(step, now_ns);
  if (phase_ == Phase::kProductive) Close(now_ns);
  productive_since_checkpoint_ns_ =
      std::max<int64_t>(0, productive_since_checkpoint_ns_ - staged_covers_ns_);
  last_checkpoint_step_ = std::max(last_checkpoint_step_, step);
  staged_step_ = -1;
  staged_covers_ns_ = 0;
}

void GoodputLedger::OnFailure(int64_t failure_ns, int64_t now_ns) {
  if (finished_) return;
  staged_step_ = -1;  // the save in flight died with the workers
  staged_covers_ns_ = 0;
  Close(now_ns);
  const int p = static_cast<int>(Phase::kProductive);
  int64_t silent = std::clamp<int64_t>(now_ns - failure_ns, 0, productive_since_checkpoint_ns_);
  if (phase_ != Phase::kProductive) silent = 0;  // the failure hit outside stepping
  ns_[p] -= silent;
  ns_[static_cast<int>(Phase::kDetection)] += silent;
  int64_t lost = productive_since_checkpoint_ns_ - silent;
  ns_[p] -= lost;
  ns_[static_cast<int>(Phase::kLostWork)] += lost;
  productive_since_checkpoint_ns_ = 0;
  phase_ = Phase::kRestart;
}

void GoodputLedger::Finish(int64_t now_ns) {
  if (finished_) return;
  Close(now_ns);
  finished_ = true;
  finish_ns_ = now_ns;
}

int64_t GoodputLedger::Ns(Phase phase, int64_t now_ns) const {
  int64_t v = ns_[static_cast<int>(phase)];
  if (!finished_ && phase == phase_) v += std::max<int64_t>(0, now_ns - phase_start_ns_);
  return v;
}

int64_t GoodputLedger::Seconds(Phase phase) const {
  return ns_[static_cast<int>(phase)] / 1'000'000'000;
}

double GoodputLedger::Ettr(int64_t now_ns) const {
  int64_t end = finished_ ? finish_ns_ : now_ns;
  int64_t wall = end - start_ns_;
  return wall > 0 ? static_cast<double>(Ns(Phase::kProductive, end)) / static_cast<double>(wall)
                  : 0.0;
}

nlohmann::json GoodputLedger::ToJson(int64_t now_ns) const {
  int64_t end = finished_ ? finish_ns_ : now_ns;
  nlohmann::json j;
  j["wall_seconds"] = (end - start_ns_) / 1e9;
  nlohmann::json cats = nlohmann::json::object();
  for (int i = 0; i < kPhaseCount; ++i) {
    cats[PhaseName(static_cast<Phase>(i))] = Ns(static_cast<Phase>(i), end) / 1e9;
  }
  j["seconds"] = cats;
  j["ettr"] = Ettr(end);
  j["restarts"] = restarts_;
  j["steps_completed_events"] = steps_;
  j["last_step"] = last_step_;
  j["last_checkpoint_step"] = last_checkpoint_step_;
  j["last_durable_step"] = last_durable_step_;
  j["isolation_actions"] = {
      {"succeeded", isolations_[0]}, {"failed", isolations_[1]}, {"dry_run", isolations_[2]}};
  return j;
}

std::string GoodputLedger::ToTable(int64_t now_ns) const {
  int64_t end = finished_ ? finish_ns_ : now_ns;
  double wall = (end - start_ns_) / 1e9;
  std::string out = fmt::format("  {:<12} {:>10} {:>7}\n", "goodput", "seconds", "share");
  for (int i = 0; i < kPhaseCount; ++i) {
    if (static_cast<Phase>(i) == Phase::kDegraded) continue;  // titan sim's only
    double s = Ns(static_cast<Phase>(i), end) / 1e9;
    out += fmt::format("  {:<12} {:>10.2f} {:>6.1f}%\n", PhaseName(static_cast<Phase>(i)), s,
                       wall > 0 ? 100.0 * s / wall : 0.0);
  }
  out += fmt::format("  {:<12} {:>10.2f}\n", "wall", wall);
  out += fmt::format("  ETTR = productive / wall = {:.3f}   restarts: {}\n", Ettr(end), restarts_);
  return out;
}

void GoodputLedger::AppendPrometheus(int64_t now_ns, ExpositionWriter& out) const {
  const int64_t end = finished_ ? finish_ns_ : now_ns;
  out.Family("titan_run_goodput_seconds", "gauge",
             "Wall time of the job by category (see docs/run.md).");
  for (int i = 0; i < kPhaseCount; ++i) {
    out.Sample(Ns(static_cast<Phase>(i), end) / 1e9, "category", PhaseName(static_cast<Phase>(i)));
  }
  out.Family("titan_run_wall_seconds", "gauge", "Wall time since titan run started.")
      .Sample((end - start_ns_) / 1e9);
  out.Family("titan_run_ettr", "gauge", "Effective training time ratio: productive / wall.")
      .Sample(Ettr(end));
  out.Family("titan_run_restarts", "gauge", "Restarts of the worker group so far.")
      .Sample(restarts_);
  out.Family("titan_run_last_checkpoint_step", "gauge", "Step of the last completed checkpoint.")
      .Sample(static_cast<double>(last_checkpoint_step_));
  out.Family("titan_run_last_durable_step", "gauge",
             "Step of the last checkpoint copied to the mirror.")
      .Sample(static_cast<double>(last_durable_step_));
  out.Family("titan_run_isolation_actions_total", "counter",
             "Isolation actions (--on-isolate) by result.");
  const char* results[] = {"succeeded", "failed", "dry_run"};
  for (int i = 0; i < 3; ++i) out.Sample(static_cast<double>(isolations_[i]), "result", results[i]);
}

}  // namespace titan::supervisor
