#include "src/supervisor/monitor.h"

#include <sys/wait.h>

#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/log.h"

namespace titan::supervisor {

using nlohmann::json;

Monitor::Monitor(const RunOptions& options, int64_t start_ns, MonitorHost& host, RunLog& log,
                 GoodputLedger& ledger, Rendezvous& rdzv, RunOutputs& outputs,
                 const RestartBudget& budget, cluster::SlurmNodeWatch* slurm_watch)
    : o_(options),
      start_ns_(start_ns),
      host_(host),
      log_(log),
      ledger_(ledger),
      rdzv_(rdzv),
      outputs_(outputs),
      slurm_watch_(slurm_watch),
      events_(options, host, log, ledger, outputs.step_window()),
      recovery_(
          options, log, ledger, rdzv, budget, [this] { StopWorkers(); },
          [this](const std::string& kind, int64_t step, nlohmann::json* incident) {
            return host_.DiagnoseFailure(kind, step, incident);
          }) {}

void Monitor::HandleEvents(const std::vector<wire::ParsedEvent>& events, int64_t now) {
  for (const wire::ParsedEvent& e : events) events_.Handle(e, now);
}

Outcome Monitor::Run(const Assignment& a, int64_t gen_wall_start_ns) {
  current_ = a;
  oom_kills_at_start_ = host_.OomKills();
  events_.StartGeneration(a, gen_wall_start_ns, host_.Now());
  host_.DrainEvents();  // events of the previous generation
  hang_deferred_until_ns_ = 0;
  int64_t next_straggler_ns = host_.Now() + kNsPerSecond;
  bool local_done = false;
  marked_done_ = false;
  next_done_try_ns_ = 0;
  while (true) {
    const int stop_signal = host_.WaitForInput(events_.NextWakeNs(host_.Now()));
    if (stop_signal != 0) {
      if (!local_done) return Outcome::kPreempted;
      // Nothing left here to stop or checkpoint: the job's own result stands.
      finish_reason_ = fmt::format(
          "every local worker exited 0; stopped by signal {} while waiting for the other "
          "nodes to finish",
          stop_signal);
      return Outcome::kSucceededLocally;
    }
    int64_t now = host_.Now();
    HandleEvents(host_.DrainEvents(), now);
    // Exits: a non-zero exit or a signal is a crash (signal deaths first: they are causes, the
    // other ranks' errors their consequences).
    std::vector<size_t> exited = host_.Reap();
    const std::vector<Worker>& workers = host_.workers();
    std::stable_sort(exited.begin(), exited.end(), [&workers](size_t x, size_t y) {
      return WIFSIGNALED(workers[x].wait_status) > WIFSIGNALED(workers[y].wait_status);
    });
    for (size_t i : exited) {
      const Worker& w = workers[i];
      if (WaitStatusSuccess(w.wait_status)) {
        log_.Write("exit", {{"rank", w.rank}, {"pid", w.pid}, {"status", "exit code 0"}});
        continue;
      }
      return Crash(w);
    }
    if (!local_done && std::all_of(workers.begin(), workers.end(), [](const Worker& w) {
          return !w.running && WaitStatusSuccess(w.wait_status);
        })) {
      local_done = true;
      ledger_.Enter(Phase::kWaiting, now);
    }
    if (local_done) {
      if (auto o = ConfirmDone(a, now); o.has_value()) return *o;
    }
    events_.InjectByTime(NsToSeconds(now - start_ns_), now);
    events_.DriveSlow(now);
    if (!local_done) {
      if (auto verdict = events_.hang().Check(now)) {
        Outcome o;
        if (Hang(*verdict, &o)) return o;
      }
    }
    if (now >= next_straggler_ns) {
      next_straggler_ns = now + kNsPerSecond;
      if (auto o = Stragglers(); o.has_value()) return *o;
    }
    auto health = rdzv_.Poll(a);
    if (health.ok()) {
      if (health->consulted) StoreReachable(now);
      if (health->restart) return recovery_.Follow(health->reason, host_.Now());
      if (!health->lost.empty()) {
        // A peer leaves as soon as every node is done: if this node is done too, that is the
        // job's end, not a lost node.
        if (local_done && marked_done_) {
          Result<bool> done = rdzv_.AllDone(a);
          if (done.ok() && *done) return Outcome::kSucceeded;
        }
        return recovery_.LostNodes(a, health->lost, host_.Now());
      }
    } else {
      StoreUnreachable(health.status(), now);
    }
    outputs_.ReportPrefetch();
    recovery_.ReportIsolations();
    if (slurm_watch_) {
      if (auto lost = slurm_watch_->LostState(); lost.has_value()) {
        return recovery_.LeaveLostNode(*lost, host_.Now());
      }
    }
    outputs_.PublishMetrics(now, a, host_.EventsDropped());
  }
}

// Once every local worker exited 0: records that in the store and returns kSucceeded when every
// node has, checking every tick (a peer that finished leaves the job at once, and must be seen
// as done, not lost). After a store error it retries once a second; when the store stays
// unreachable for o_.finish_timeout_ns, returns kSucceededLocally: the job's own result is known
// here, only the other nodes' completion is unconfirmed.
std::optional<Outcome> Monitor::ConfirmDone(const Assignment& a, int64_t now) {
  if (now < next_done_try_ns_) return std::nullopt;
  Status status = marked_done_ ? OkStatus() : rdzv_.MarkDone(a);
  if (status.ok()) {
    marked_done_ = true;
    Result<bool> done = rdzv_.AllDone(a);
    if (done.ok()) {
      StoreReachable(now);
      if (*done) return Outcome::kSucceeded;
      return std::nullopt;
    }
    status = done.status();
  }
  StoreUnreachable(status, now);
  next_done_try_ns_ = now + kNsPerSecond;
  if (now - store_down_since_ns_ < o_.finish_timeout_ns) return std::nullopt;
  finish_reason_ = fmt::format(
      "every local worker exited 0; the other nodes' completion is unconfirmed: the store "
      "was unreachable for {:.0f} s (--finish-timeout): {}",
      NsToSeconds(now - store_down_since_ns_), status.message());
  return Outcome::kSucceededLocally;
}

// Store (etcd) outages: one warning when one starts, one line when it ends, so a long outage is
// neither silent nor a flood.
void Monitor::StoreUnreachable(const Status& status, int64_t now) {
  if (store_down_since_ns_ != 0) return;
  store_down_since_ns_ = now;
  log_.Write("warning", {{"what", std::string(status.message())}, {"store", "unreachable"}});
  Log(LogLevel::kWarning, "run", "the store is unreachable: {}", status.message());
}

void Monitor::StoreReachable(int64_t now) {
  if (store_down_since_ns_ == 0) return;
  const double down_s = NsToSeconds(now - store_down_since_ns_);
  store_down_since_ns_ = 0;
  log_.Write("warning",
             {{"what", fmt::format("the store is reachable again after {:.1f} s", down_s)},
              {"store", "reachable"}});
  Log(LogLevel::kInfo, "run", "the store is reachable again after {:.1f} s", down_s);
}

Outcome Monitor::Crash(const Worker& w) {
  int64_t now = host_.Now();
  const RankState& rs = events_.rank(w.rank);
  json evidence = {{"rank", w.rank},
                   {"local_rank", w.local_rank},
                   {"pid", w.pid},
                   {"status", DescribeWaitStatus(w.wait_status)},
                   {"step", rs.step}};
  // A SIGKILL the job's cgroup counted as an OOM kill (memory.events) is the OOM killer's.
  const int64_t oom_kills = host_.OomKills();
  if (oom_kills >= 0 && oom_kills_at_start_ >= 0)
    evidence["oom_kills"] = oom_kills - oom_kills_at_start_;
  int64_t failure_ns = w.exit_mono_ns;
  if (rs.inject_mono_ns > 0 && rs.inject_kind == "crash") {
    failure_ns = rs.inject_mono_ns;
    evidence["detection_ms"] = (now - rs.inject_mono_ns) / 1e6;
  }
  log_.Write("crash", evidence);
  // In a multi-node job an exit code (not a signal) is often the consequence of a failure
  // elsewhere (a collective lost its peer): before claiming it, wait up to the lease TTL for the
  // node that saw the cause to claim it, or for a lost node's lease to expire.
  if (current_.nnodes > 1 && !WIFSIGNALED(w.wait_status)) {
    int64_t deadline = now + o_.lease_ttl_seconds * kNsPerSecond + kNsPerSecond;
    while (host_.Now() < deadline) {
      auto h = rdzv_.Poll(current_);
      if (h.ok() && h->restart) return recovery_.Follow(h->reason, host_.Now(), &evidence);
      if (h.ok() && !h->lost.empty()) return recovery_.LostNodes(current_, h->lost, host_.Now());
      host_.Sleep(50 * kNsPerMs);
    }
  }
  return recovery_.Fail(current_, "crash",
                        fmt::format("rank {} {}", w.rank, DescribeWaitStatus(w.wait_status)),
                        failure_ns, evidence, host_.Now());
}

// Returns true (and the outcome) if the hang is acted on now.
bool Monitor::Hang(const HangDetector::Verdict& v, Outcome* outcome) {
  int64_t now = host_.Now();
  int suspect = v.rank;
  for (const Worker& w : host_.workers()) {
    if (w.running && host_.ProcessState(w.pid) == 'T') suspect = w.rank;
  }
  bool local_cause = suspect != v.rank || events_.rank(v.rank).inject_kind == "hang";
  if (!local_cause) {
    // Are our ranks behind the others? If every local rank reached the same step, the cause may
    // be on another node, whose supervisor should claim it: wait a little first.
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& [r, s] : events_.ranks()) {
      lo = std::min(lo, s.step);
      hi = std::max(hi, s.step);
    }
    local_cause = lo < hi;
  }
  if (!local_cause && current_.nnodes > 1) {
    if (hang_deferred_until_ns_ == 0) hang_deferred_until_ns_ = now + 2 * kNsPerSecond;
    if (now < hang_deferred_until_ns_) return false;
  }
  const RankState& rs = events_.rank(suspect);
  json evidence = {{"rank", suspect},
                   {"silent_s", NsToSeconds(v.silent_ns)},
                   {"threshold_s", NsToSeconds(v.threshold_ns)},
                   {"p99_step_s", events_.hang().P99IntervalNs() / 1e9},
                   {"before_first_step", v.before_first_step},
                   {"step", rs.step}};
  int64_t failure_ns = v.last_progress_ns;
  if (rs.inject_mono_ns > 0 && rs.inject_kind == "hang") {
    evidence["detection_s"] = NsToSeconds(now - rs.inject_mono_ns);
    failure_ns = rs.inject_mono_ns;
  }
  log_.Write("hang", evidence);
  host_.CaptureStacks();
  *outcome =
      recovery_.Fail(current_, "hang",
                     fmt::format("rank {} made no progress for {:.1f} s (bound {:.1f} s)", suspect,
                                 NsToSeconds(v.silent_ns), NsToSeconds(v.threshold_ns)),
                     failure_ns, evidence, host_.Now());
  return true;
}

// Once a second: per-rank median compute times, merged with the other nodes' (through etcd),
// compared by the robust rule; this node reports its own ranks only.
std::optional<Outcome> Monitor::Stragglers() {
  auto medians = events_.straggler().Medians();
  if (current_.nnodes > 1) {
    rdzv_.PublishStats(current_, medians).IgnoreError();
    auto all = rdzv_.ReadStats(current_);
    if (all.ok()) {
      for (const auto& [rank, m] : *all) {
        if (!events_.IsLocal(rank)) medians[rank] = m;
      }
    }
  }
  for (const StragglerDetector::Finding& f : events_.straggler().Evaluate(medians)) {
    if (!events_.IsLocal(f.rank)) continue;
    if (f.consecutive != o_.straggler.persist) continue;  // report once, when it persists
    const bool exclude = f.persistent && o_.straggler_restart && current_.nnodes > 1;
    log_.Write("straggler", {{"rank", f.rank},
                             {"median_compute_ms", f.median_ns / 1e6},
                             {"peers_median_ms", f.peers_median_ns / 1e6},
                             {"score", f.score},
                             {"persistent", f.persistent},
                             {"action", o_.straggler_restart && current_.nnodes > 1
                                            ? "exclude its node and restart"
                                            : "report (--straggler-action=report)"}});
    if (exclude) {
      return recovery_.ExcludeStraggler(current_, f.rank,
                                        fmt::format("rank {} {:.2f}x slower than its peers", f.rank,
                                                    f.median_ns / std::max(f.peers_median_ns, 1.0)),
                                        host_.Now());
    }
  }
  return std::nullopt;
}

void Monitor::StopWorkers() {
  outputs_.FlushSteps(host_.Now(), current_.generation, /*force=*/true);
  events_.ForgetSlow();
  int64_t t0 = host_.Now();
  int killed = host_.StopWorkers(o_.failure_grace_ns);
  stop_ns_ = host_.Now() - t0;
  log_.Write(
      "stopped",
      {{"generation", current_.generation}, {"stop_ms", stop_ns_ / 1e6}, {"sigkilled", killed}});
}

}  // namespace titan::supervisor
