// Supervisor: the loop of `titan run` on one node. Launches the workers of each generation,
// watches them (exits via SIGCHLD, progress via step events on its own socket, etcd for the other
// nodes), detects crash / hang / straggler / lost node, decides (restart, exclude, give up),
// recovers, injects faults for drills and keeps the goodput ledger and the event log.
// Parts: supervisor.cc (setup, rendezvous, spawning, restart budget, preemption, the end),
// monitor.h (one generation's loop and its verdicts, through monitor_host.h), rank_events.h
// (step events, injections), recovery.h (restart, exclusion, isolation decisions),
// run_outputs.h (metrics, steps, prefetch, ledger, summary), worker_env.h, stack_capture.h.
//
// Thread safety: Run() is called once from the main thread; it blocks SIGCHLD, SIGTERM, SIGINT
// and SIGHUP in the calling thread before any helper thread starts (helper threads inherit the
// mask, so every signal is read by the loop through a signalfd).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/cluster/isolation.h"
#include "src/predict/node_risk.h"
#include "src/supervisor/inject.h"
#include "src/supervisor/policy.h"
#include "src/supervisor/rendezvous.h"

namespace titan::supervisor {

// titan run's exit code when the job succeeded but titan run could not write its own records
// (the event log or the ledger: a full run directory). docs/run.md lists every exit code.
inline constexpr int kExitRecordsNotWritten = 3;

struct RunOptions {
  std::vector<std::string> command;  // after "--"
  int nproc_per_node = 1;
  int min_nodes = 1;
  int max_nodes = 1;
  std::string etcd;  // http://host:port; empty: single node, no etcd (or `plan`)
  // Several nodes without etcd: membership from the scheduler (Slurm's node list); no restart
  // in place (rendezvous.h). Its nproc is taken from nproc_per_node.
  std::optional<StaticPlan> plan;
  std::string job_id = "default";
  std::string node_id;    // default hostname-pid
  std::string node_addr;  // default 127.0.0.1 single-node, else the hostname
  std::string run_dir;  // socket, stack files, default outputs; default /tmp/titan-run-<job>-<pid>
  std::string event_log;          // default <run_dir>/events.jsonl
  std::string ledger_json;        // default <run_dir>/ledger.json
  std::string metrics_file;       // Prometheus text, rewritten every second; empty: none
  int metrics_port = 0;           // serve /metrics on 127.0.0.1:port; 0: none
  std::string checkpoint_dir;     // exported as TITAN_CHECKPOINT_DIR
  std::string checkpoint_mirror;  // exported as TITAN_CHECKPOINT_MIRROR (tiering)
  // With a mirror and a local checkpoint_dir: at every (re)start of the workers, the node of
  // group rank 0 copies the mirror's newest checkpoint into checkpoint_dir while they start
  // (checkpoint/prefetch.h) when the directory holds none as new.
  bool checkpoint_prefetch = true;
  // checkpoint_dir is each node's own disk (exported as TITAN_CHECKPOINT_NODE_LOCAL=1): ranks
  // commit at the mirror, and every node prefetches the data files of its own ranks.
  bool checkpoint_node_local = false;
  // Each rank's stdout and stderr, bounded (RankLogs) in log_dir (default RUN_DIR/ranks) and shown
  // on titan run's terminal too; rank_logs false: workers inherit titan run's stdout/stderr.
  bool rank_logs = true;
  std::string log_dir;
  int64_t rank_log_bytes = int64_t{64} << 20;  // per rank and generation
  // Turn PyTorch's NCCL Flight Recorder on where the user has not (failure_evidence.h); on a
  // hang, ask for the dumps and wait up to dump_wait_ns.
  bool flight_recorder = true;
  int64_t dump_wait_ns = int64_t{5} * 1'000'000'000;
  // Diagnose each failure (src/diagnose) and decide by its class (failure_policy.h).
  bool diagnose = true;
  double isolate_confidence = 0.7;
  int64_t isolate_interval_ns = int64_t{10} * 60 * 1'000'000'000;
  // > 0: memory limit of the workers' cgroup (where titan run can make one); OOM kills in it are
  // counted from its memory.events.
  int64_t memory_max_bytes = 0;
  RestartOptions restart;
  int64_t failure_grace_ns = 1'000'000'000;  // SIGTERM -> SIGKILL when recovering
  int64_t term_grace_ns = 30'000'000'000;    // on SIGTERM to titan run (preemption)
  int64_t stack_wait_ns = 2'000'000'000;     // waiting for a hung worker's stack dump
  HangOptions hang;
  StragglerOptions straggler;
  bool straggler_restart = false;  // --straggler-action=exclude: restart without the node
  IsolationOptions isolation;
  // What else happens when a node is taken out of the job (excluded, or lost): scheduler
  // actions run in the background, bounded, each an `isolate` event (cluster/isolation.h).
  // Only the node that decides runs them: the excluded node itself, or the node whose restart
  // request won for a lost node.
  std::vector<cluster::IsolationAction> isolate_actions;
  bool isolate_dry_run = false;
  int64_t isolate_timeout_ns = 30'000'000'000;
  // This node's name for the scheduler ({node} in the actions): under Slurm SLURMD_NODENAME;
  // else $NODE_NAME (Kubernetes' downward API), else the hostname.
  std::string scheduler_node;
  // Under Slurm: poll this node's state (scontrol) every interval; a node Slurm marks DOWN or
  // NOT_RESPONDING (its slurmd is gone) leaves the job as a lost node does. 0: off.
  std::string slurm_job_id;
  int64_t slurm_watch_interval_ns = 0;
  std::vector<Injection> injections;
  uint64_t seed = 0;
  int64_t lease_ttl_seconds = 5;
  int64_t last_call_ns = 2'000'000'000;
  int64_t join_timeout_ns = 600LL * 1'000'000'000;
  // After every local worker exited 0, how long the store (etcd) may stay unreachable while
  // titan run waits to confirm that the other nodes finished too; then it finishes on the local
  // result (exit 0, the other nodes unconfirmed).
  int64_t finish_timeout_ns = 60LL * 1'000'000'000;
  bool quiet = false;  // no end-of-run summary on stderr
  // Failure risk per node (`titan predict risk --json`, --risk): spares are chosen lowest risk
  // first, workers get the recommended checkpoint interval (TITAN_CHECKPOINT_INTERVAL_S) from
  // the job's nodes' risk, and a node at or above drain_risk leaves before joining when its
  // expected lost work exceeds the cost of moving it (src/predict/node_risk.h). Null: none.
  std::shared_ptr<const predict::NodeRiskTable> risk;
  double drain_risk = 0;                        // 0: never drain
  int64_t checkpoint_cost_ns = 30'000'000'000;  // delta in Young/Daly: one checkpoint's stall
  int64_t move_cost_ns = 120'000'000'000;       // a planned restart onto a spare
};

// Runs the job to completion. Returns the process exit code: 0 the job finished, 1 it failed
// (restart budget spent, every node excluded, setup error), 143 preempted by SIGTERM
// (130 for SIGINT) after the workers were asked to checkpoint.
int RunSupervisor(const RunOptions& options);

}  // namespace titan::supervisor
