#include "src/supervisor/recovery.h"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/base/text.h"
#include "src/supervisor/worker_env.h"

namespace titan::supervisor {

using nlohmann::json;

Recovery::Recovery(const RunOptions& options, RunLog& log, GoodputLedger& ledger, Rendezvous& rdzv,
                   const RestartBudget& budget, std::function<void()> stop_workers,
                   Diagnoser diagnose)
    : o_(options),
      log_(log),
      ledger_(ledger),
      rdzv_(rdzv),
      budget_(budget),
      stop_workers_(std::move(stop_workers)),
      diagnose_(std::move(diagnose)),
      failures_(options.isolation),
      isolation_(cluster::IsolationRunnerOptions{
          options.isolate_actions, options.isolate_timeout_ns, options.isolate_dry_run}) {}

Outcome Recovery::Fail(const Assignment& a, const std::string& kind, const std::string& detail,
                       int64_t failure_ns, const json& evidence, int64_t now, bool count_failure) {
  detect_ns_ = now;
  ledger_.OnFailure(std::min(failure_ns, now), now);
  json reason = {{"reason", kind}, {"detail", detail}, {"evidence", evidence}};
  auto first = rdzv_.RequestRestart(a.generation, reason);
  const bool claimed = first.ok() && *first;
  stop_workers_();
  // What the stopped generation left, diagnosed: the decision follows its class.
  const int64_t step = evidence.is_object() ? evidence.value("step", int64_t{-1}) : -1;
  FailureFacts facts;
  facts.kind = kind;
  facts.step = step;
  json incident = nullptr;
  if (diagnose_) facts = diagnose_(kind, step, &incident);
  if (!incident.is_null()) {
    json e = incident;
    e["generation"] = a.generation;
    e["failure"] = kind;
    log_.Write("diagnosis", std::move(e));
  }
  last_diagnosis_ = incident;
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  FailurePolicyOptions policy{o_.isolate_confidence, o_.isolate_interval_ns, !o_.etcd.empty()};
  FailureDecision d = DecideFailure(facts, history_, policy, {o_.scheduler_node, o_.node_id, host},
                                    now, last_isolation_ns_);
  history_.push_back(facts);
  std::string note = claimed ? "this node saw the cause first"
                             : "another node already restarted "
                               "the job: a consequence";
  if (d.verdict == FailureVerdict::kRestart && budget_.Exhausted()) {
    d.verdict = FailureVerdict::kStop;
    d.why = fmt::format("stop: the restart budget of {} is spent (--max-restarts); {}",
                        o_.restart.max_restarts, d.why);
  }
  if (d.verdict == FailureVerdict::kExclude) {
    excluded_until_ns_ = now + o_.isolation.cooldown_ns;
    log_.Write("exclude", {{"node", o_.node_id},
                           {"reason", d.why},
                           {"cooldown_s", NsToSeconds(o_.isolation.cooldown_ns)}});
    if (d.isolate) {
      last_isolation_ns_ = now;
      Isolate(o_.scheduler_node,
              facts.culprit.rank >= 0 ? static_cast<int>(facts.culprit.rank) : -1, d.why);
    }
  } else if (claimed && count_failure && d.verdict == FailureVerdict::kRestart) {
    failures_.Record(o_.node_id, evidence.value("local_rank", 0), now);
    const int recent = failures_.RecentFailures(o_.node_id, now);
    if (o_.etcd.empty()) {
      // Without etcd (one node, or Slurm's static plan) no node can be replaced or blamed.
      if (recent >= o_.isolation.max_failures) {
        note += fmt::format(
            "; {} failures within {:.0f} s, but without etcd no node can be "
            "excluded",
            recent, NsToSeconds(o_.isolation.window_ns));
      }
    } else if (failures_.ShouldExclude(o_.node_id, now)) {
      excluded_until_ns_ = now + o_.isolation.cooldown_ns;
      std::string why = fmt::format("{}: {} failures within {:.0f} s", kind, recent,
                                    NsToSeconds(o_.isolation.window_ns));
      log_.Write("exclude", {{"node", o_.node_id},
                             {"failures", recent},
                             {"window_s", NsToSeconds(o_.isolation.window_ns)},
                             {"cooldown_s", NsToSeconds(o_.isolation.cooldown_ns)},
                             {"reason", why}});
      Isolate(o_.scheduler_node, evidence.is_object() ? evidence.value("rank", -1) : -1, why);
    }
  }
  json fields = {{"action", FailureVerdictName(d.verdict)},
                 {"reason", kind},
                 {"detail", detail},
                 {"claimed", claimed},
                 {"why", d.why},
                 {"note", note}};
  if (facts.diagnosed) {
    fields["class"] = diagnose::FaultClassName(facts.fault);
    fields["fix"] = diagnose::ActionName(facts.action);
  }
  log_.Write("decision", std::move(fields));
  last_decision_ = d.why;
  return d.verdict == FailureVerdict::kStop ? Outcome::kFatal : Outcome::kRestart;
}

Outcome Recovery::Follow(const json& record, int64_t now, const json* local_evidence) {
  detect_ns_ = now;
  ledger_.OnFailure(now, now);
  json fields = {{"action", RestartOrStop()},
                 {"reason", ReasonText(record)},
                 {"by", record.value("node", "")},
                 {"generation", record.value("gen", 0)}};
  if (local_evidence) fields["local_exit"] = *local_evidence;
  log_.Write("decision", fields);
  stop_workers_();
  return Outcome::kRestart;
}

Outcome Recovery::LostNodes(const Assignment& a, const std::vector<std::string>& lost,
                            int64_t now) {
  log_.Write(
      "lost",
      {{"nodes", lost}, {"note", "lease expired in etcd"}, {"lease_ttl_s", o_.lease_ttl_seconds}});
  detect_ns_ = now;
  ledger_.OnFailure(now, now);
  json reason = {{"reason", "node-lost"}, {"detail", fmt::format("{} lost", fmt::join(lost, ","))}};
  auto first = rdzv_.RequestRestart(a.generation, reason);
  const bool claimed = first.ok() && *first;
  log_.Write("decision", {{"action", RestartOrStop()},
                          {"reason", "node-lost"},
                          {"detail", reason["detail"]},
                          {"claimed", claimed}});
  if (claimed) {
    for (const std::string& id : lost) {
      for (size_t i = 0; i < a.members.size(); ++i) {
        if (a.members[i] == id && i < a.member_hosts.size()) {
          Isolate(a.member_hosts[i], -1, fmt::format("node {} lost (etcd lease expired)", id));
        }
      }
    }
  }
  stop_workers_();
  return Outcome::kRestart;
}

Outcome Recovery::LeaveLostNode(const cluster::SlurmNodeState& state, int64_t now) {
  log_.Write("lost", {{"nodes", {o_.node_id}},
                      {"source", "slurm"},
                      {"host", state.name},
                      {"state", state.state},
                      {"reason", state.reason},
                      {"note", "Slurm marks this node down or not responding: leaving the job"}});
  detect_ns_ = now;
  ledger_.OnFailure(now, now);
  stop_workers_();
  rdzv_.Leave();
  log_.Write("decision",
             {{"action", "leave"},
              {"reason", "node-lost"},
              {"detail", fmt::format("Slurm state of {}: {}", state.name, state.state)}});
  return Outcome::kFatal;
}

Outcome Recovery::ExcludeStraggler(const Assignment& a, int rank, const std::string& detail,
                                   int64_t now) {
  excluded_until_ns_ = now + o_.isolation.cooldown_ns;
  std::string why = fmt::format("persistent straggler rank {}", rank);
  log_.Write("exclude", {{"node", o_.node_id},
                         {"reason", why},
                         {"cooldown_s", NsToSeconds(o_.isolation.cooldown_ns)}});
  Isolate(o_.scheduler_node, rank, why);
  return Fail(a, "straggler", detail, now, json{{"rank", rank}}, now, /*count_failure=*/false);
}

void Recovery::Isolate(const std::string& host, int rank, const std::string& reason) {
  if (!isolation_.enabled()) return;
  if (host.empty()) {
    log_.Write("isolate", {{"node", nullptr},
                           {"ok", false},
                           {"result",
                            "not run: the node's scheduler name is unknown (it ran "
                            "an older titan run)"}});
    return;
  }
  isolation_.Submit({host, rank, reason, o_.job_id});
}

void Recovery::ReportIsolations() {
  for (const cluster::IsolationOutcome& o : isolation_.TakeFinished()) {
    log_.Write("isolate", {{"node", o.target.node},
                           {"rank", o.target.rank},
                           {"reason", o.target.reason},
                           {"action", o.action},
                           {"command", o.command},
                           {"dry_run", o.dry_run},
                           {"ok", o.ok},
                           {"result", o.result},
                           {"output", o.output},
                           {"ms", o.elapsed_ns / 1e6}});
    ledger_.OnIsolation(o.ok, o.dry_run);
    if (!o.ok) {
      Log(LogLevel::kWarning, "run", "isolation action {} for node {} failed ({}): {}", o.action,
          o.target.node, o.result, Trim(o.output));
    }
  }
}

}  // namespace titan::supervisor
