// `titan run [options] -- COMMAND ARGS...`: option parsing; the loop is in supervisor.cc.
#include "src/supervisor/run_command.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/base/atomic_file.h"
#include "src/base/clock.h"
#include "src/base/command_line.h"
#include "src/base/duration_option.h"
#include "src/base/text.h"
#include "src/cluster/slurm.h"
#include "src/supervisor/supervisor.h"
#include "src/supervisor/torchrun_args.h"

namespace titan {
namespace {

using supervisor::RunOptions;

// "4" or "2:4" (torchrun's MIN:MAX).
bool ParseNodes(const std::string& text, int* min_nodes, int* max_nodes) {
  size_t colon = text.find(':');
  int64_t lo = 0, hi = 0;
  if (colon == std::string::npos) {
    if (!ParseInt64(text, &lo)) return false;
    hi = lo;
  } else if (!ParseInt64(text.substr(0, colon), &lo) || !ParseInt64(text.substr(colon + 1), &hi)) {
    return false;
  }
  if (lo < 1 || hi < lo || hi > 65536) return false;
  *min_nodes = static_cast<int>(lo);
  *max_nodes = static_cast<int>(hi);
  return true;
}

// Several nodes under Slurm without etcd: the membership is Slurm's node list, the master its
// first node (NodeAddr from scontrol, or MASTER_ADDR), the port MASTER_PORT or 20000 + the job
// id mod 10000, so that every node computes the same.
Result<supervisor::StaticPlan> SlurmPlan(const cluster::SlurmEnv& env) {
  if (env.node_index < 0) {
    return InvalidArgumentError(
        "inside a Slurm job of several nodes without --etcd, titan run needs SLURM_NODEID: run it "
        "with srun --ntasks-per-node=1");
  }
  supervisor::StaticPlan plan;
  plan.members = env.nodes;
  plan.index = env.node_index;
  if (const char* addr = std::getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0') {
    plan.master_addr = addr;
  } else {
    auto first = cluster::QuerySlurmNode(env.nodes[0], 10 * kNsPerSecond);
    plan.master_addr = first.ok() && !first->addr.empty() ? first->addr : env.nodes[0];
  }
  int64_t port = 0;
  if (const char* p = std::getenv("MASTER_PORT"); p != nullptr && *p != '\0') {
    if (!ParseInt64(p, &port) || port < 1 || port > 65535) {
      return InvalidArgumentError(fmt::format("MASTER_PORT='{}' is not a port", p));
    }
  } else {
    int64_t job = 0;
    ParseInt64(env.job_id, &job);
    port = 20000 + job % 10000;
  }
  plan.master_port = static_cast<int>(port);
  return plan;
}

}  // namespace

int RunCommand(int argc, char** argv) {
  // Everything after the first "--" is the worker command, untouched.
  std::vector<std::string> command;
  int own_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      own_argc = i;
      for (int j = i + 1; j < argc; ++j) command.emplace_back(argv[j]);
      break;
    }
  }
  RunOptions o;
  CLI::App app{
      "Launch a distributed training job (torchrun-compatible environment), detect crash, hang, "
      "straggler and lost node, isolate repeatedly failing nodes, restart from the last "
      "checkpoint elastically, and account goodput.\n\n"
      "usage: titan run [options] train.py ARGS...      (as torchrun: python -u train.py)\n"
      "       titan run [options] -m MODULE ARGS...     (python -u -m MODULE)\n"
      "       titan run [options] --no-python CMD ARGS...\n"
      "       titan run [options] -- COMMAND ARGS...\n"
      "One `titan run` per node; with --nnodes > 1 the nodes meet through etcd (--etcd), or, "
      "without restarts in place, through torchrun's static --node-rank/--master-addr.",
      "titan run"};
  std::string nnodes = "1", nproc = "1";
  supervisor::ScriptForm script;
  int node_rank = -1;
  std::string master_addr;
  int master_port = 0;
  // torchrun flags titan run takes and ignores: what they tune is titan run's own business
  // (monitoring, logs, start method) or has no equivalent. Each given one is named on stderr.
  const std::vector<std::string> kIgnoredTorchrunFlags = {
      "--monitor-interval,--monitor_interval",
      "--role",
      "--redirects,-r",
      "--tee,-t",
      "--start-method,--start_method",
      "--rdzv-conf,--rdzv_conf",
      "--local-addr,--local_addr",
      "--logs-specs,--logs_specs",
      "--local-ranks-filter,--local_ranks_filter"};
  std::vector<std::string> ignored_values(kIgnoredTorchrunFlags.size());
  bool run_path = false;
  std::vector<std::string> injections;
  std::string straggler_action = "report";
  bool standalone = false;
  std::string rdzv_backend;
  std::vector<std::string> on_isolate;
  o.slurm_watch_interval_ns = 5 * kNsPerSecond;
  app.add_option("--nproc-per-node,--nproc_per_node", nproc,
                 "workers on this node: N, or auto (the GPUs, else the CPUs), gpu, cpu")
      ->capture_default_str();
  app.add_flag("-m,--module", script.module,
               "the script is a Python module, run as python -u -m MODULE (as torchrun)");
  app.add_flag("--no-python,--no_python", script.no_python,
               "run the script itself, not with the Python interpreter (as torchrun)");
  app.add_option("--python", script.python,
                 "the interpreter for a script or -m module (looked up in PATH)")
      ->capture_default_str();
  app.add_flag("--run-path,--run_path", run_path,
               "accepted for torchrun compatibility (scripts are run by path anyway)");
  app.add_option("--node-rank,--node_rank", node_rank,
                 "torchrun's static rendezvous, without etcd: this node's index in --nnodes N "
                 "(no restart in place: a failure ends the job)")
      ->check(CLI::Range(0, 100'000));
  app.add_option("--master-addr,--master_addr", master_addr,
                 "static rendezvous: node rank 0's address (default 127.0.0.1)");
  app.add_option("--master-port,--master_port", master_port,
                 "static rendezvous: node rank 0's port (default 29500)")
      ->check(CLI::Range(1, 65535));
  for (size_t i = 0; i < kIgnoredTorchrunFlags.size(); ++i) {
    app.add_option(kIgnoredTorchrunFlags[i], ignored_values[i],
                   "accepted for torchrun compatibility; ignored");
  }
  app.add_option("--nnodes", nnodes, "nodes: N or MIN:MAX (elastic)");
  app.add_option("--etcd,--rdzv-endpoint,--rdzv_endpoint", o.etcd,
                 "etcd endpoint http://HOST:PORT for multi-node rendezvous");
  app.add_option("--rdzv-backend,--rdzv_backend", rdzv_backend,
                 "accepted for torchrun compatibility (etcd)");
  app.add_option("--job-id,--rdzv-id,--rdzv_id", o.job_id, "job name shared by all nodes");
  app.add_option("--node-id", o.node_id, "unique node name (default hostname-pid)");
  app.add_option("--node-addr", o.node_addr, "address other nodes reach this one at");
  app.add_flag("--standalone", standalone, "single node (the default without --etcd)");
  app.add_option("--max-restarts,--max_restarts", o.restart.max_restarts, "restart budget")
      ->check(CLI::Range(0, 1'000'000));
  AddDurationOption(app, "--backoff", &o.restart.backoff_base_ns, "first restart backoff, doubling",
                    0, 3600 * kNsPerSecond);
  AddDurationOption(app, "--backoff-max", &o.restart.backoff_max_ns, "backoff cap", 0,
                    3600 * kNsPerSecond);
  AddDurationOption(app, "--failure-grace", &o.failure_grace_ns,
                    "SIGTERM->SIGKILL grace when recovering", 0, 3600 * kNsPerSecond);
  AddDurationOption(app, "--term-grace", &o.term_grace_ns,
                    "grace for workers to checkpoint on SIGTERM", 0, 86400 * kNsPerSecond);
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "exported to workers as TITAN_CHECKPOINT_DIR (a directory or s3://bucket/prefix)");
  app.add_option("--checkpoint-mirror", o.checkpoint_mirror,
                 "exported as TITAN_CHECKPOINT_MIRROR: titan.checkpoint copies each checkpoint "
                 "there in the background and restores from it when the local one is missing "
                 "(s3://bucket/prefix)");
  app.add_flag("--checkpoint-node-local", o.checkpoint_node_local,
               "with --checkpoint-mirror: --checkpoint-dir is each node's own disk, not shared; "
               "exported as TITAN_CHECKPOINT_NODE_LOCAL=1: every rank uploads its data to the "
               "mirror and rank 0 commits there; every node prefetches its own ranks' files");
  app.add_flag("!--no-checkpoint-prefetch", o.checkpoint_prefetch,
               "with --checkpoint-mirror: do not copy the mirror's newest checkpoint into "
               "--checkpoint-dir while the workers start (by default it is, when the directory "
               "holds none as new; load_latest waits for it and reads local files)");
  app.add_option("--run-dir", o.run_dir, "socket, stack dumps, default outputs");
  app.add_option("--event-log", o.event_log, "JSON lines event log (default RUN_DIR/events.jsonl)");
  app.add_option("--ledger-json", o.ledger_json,
                 "goodput ledger JSON (default RUN_DIR/ledger.json)");
  app.add_option("--metrics-file", o.metrics_file, "Prometheus text file, rewritten every second");
  app.add_option("--metrics-port", o.metrics_port, "serve /metrics on 127.0.0.1:PORT")
      ->check(CLI::Range(0, 65535));
  app.add_option(
      "--log-dir,--log_dir", o.log_dir,
      "where each rank's stdout and stderr go, as rank-R.genG.log (default RUN_DIR/ranks); "
      "they are still shown on titan run's terminal, and titan diagnose reads them");
  bool no_rank_logs = false;
  app.add_flag("--no-rank-logs", no_rank_logs,
               "workers write to titan run's stdout/stderr directly, nothing is kept");
  app.add_option(
         "--rank-log-bytes", o.rank_log_bytes,
         "bound on each rank's output kept per generation: the first quarter whole, then the "
         "most recent output (older parts rotate away)")
      ->check(CLI::Range(int64_t{4096}, int64_t{1} << 40))
      ->capture_default_str();
  bool no_flight_recorder = false, no_diagnose = false;
  app.add_flag("--no-flight-recorder", no_flight_recorder,
               "do not turn PyTorch's NCCL Flight Recorder on (by default titan run sets "
               "TORCH_NCCL_TRACE_BUFFER_SIZE, the dump file prefix and the dump pipe where the "
               "user has not, and asks every rank for a dump on a hang)");
  AddDurationOption(app, "--dump-wait", &o.dump_wait_ns,
                    "on a hang: how long to wait for the ranks' Flight Recorder dumps", 0,
                    600 * kNsPerSecond);
  app.add_flag(
      "--no-diagnose", no_diagnose,
      "do not diagnose failures (titan diagnose on the generation's logs) before deciding");
  app.add_option("--isolate-confidence", o.isolate_confidence,
                 "a hardware fault excludes (and isolates) this node only at this diagnosis "
                 "confidence or above")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  AddDurationOption(app, "--isolate-interval", &o.isolate_interval_ns,
                    "at most one isolation for a diagnosed hardware fault per interval", 0,
                    86400 * kNsPerSecond);
  app.add_option(
         "--memory-max", o.memory_max_bytes,
         "memory limit of the workers' cgroup in bytes (where titan run can make one: root or "
         "a delegated cgroup); its OOM kills are counted and diagnosed")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50));
  app.add_option("--hang-k", o.hang.k, "hang bound = max(k * p99 step interval, floor)")
      ->check(CLI::Range(1.0, 1000.0));
  AddDurationOption(app, "--hang-floor", &o.hang.floor_ns, "hang bound floor", kNsPerSecond / 10,
                    86400 * kNsPerSecond);
  AddDurationOption(app, "--startup-timeout", &o.hang.startup_timeout_ns,
                    "allowed before the first step", kNsPerSecond / 10, 86400 * kNsPerSecond);
  AddDurationOption(app, "--checkpoint-timeout", &o.hang.checkpoint_timeout_ns,
                    "allowed inside a checkpoint save", kNsPerSecond / 10, 86400 * kNsPerSecond);
  app.add_option("--straggler-k", o.straggler.k, "robust z-score bound")
      ->check(CLI::Range(0.5, 100.0));
  app.add_option("--straggler-ratio", o.straggler.ratio, "slower than peers' median by this ratio")
      ->check(CLI::Range(1.0, 100.0));
  app.add_option("--straggler-window", o.straggler.window, "steps per median")
      ->check(CLI::Range(3, 10000));
  app.add_option("--straggler-persist", o.straggler.persist,
                 "consecutive evaluations (1/s) to persist")
      ->check(CLI::Range(1, 10000));
  app.add_option("--straggler-action", straggler_action,
                 "report | exclude (restart without the node)")
      ->check(CLI::IsMember({"report", "exclude"}));
  app.add_option("--max-failures", o.isolation.max_failures, "failures of a node that exclude it")
      ->check(CLI::Range(1, 1'000'000));
  AddDurationOption(app, "--failure-window", &o.isolation.window_ns, "window of --max-failures",
                    kNsPerSecond, 10'000'000 * kNsPerSecond);
  AddDurationOption(app, "--cooldown", &o.isolation.cooldown_ns,
                    "how long an excluded node sits out", 0, 10'000'000 * kNsPerSecond);
  app.add_option("--on-isolate", on_isolate,
                 "when a node is taken out of the job (excluded or lost), also: slurm-drain "
                 "(scontrol ... State=DRAIN), k8s-cordon (titan k8s cordon: cordon + taint), or "
                 "exec:CMD with {node} {rank} {reason} {job} (repeatable; run in order, in the "
                 "background, each an 'isolate' event; a failing action never stops recovery)");
  app.add_flag("--isolate-dry-run", o.isolate_dry_run,
               "log the --on-isolate commands that would run; run none");
  AddDurationOption(app, "--isolate-timeout", &o.isolate_timeout_ns,
                    "bound on each --on-isolate action", kNsPerSecond / 1000, 86400 * kNsPerSecond);
  app.add_option("--scheduler-node", o.scheduler_node,
                 "this node's name for the scheduler, {node} in --on-isolate (default "
                 "SLURMD_NODENAME, else NODE_NAME, else the hostname)");
  AddDurationOption(app, "--slurm-watch", &o.slurm_watch_interval_ns,
                    "under Slurm: how often to ask scontrol for this node's state; a node Slurm "
                    "marks DOWN or NOT_RESPONDING leaves the job like a lost node (0: off)",
                    0, 3600 * kNsPerSecond);
  std::string risk_file;
  app.add_option("--risk", risk_file,
                 "failure risk per node (titan predict risk ... --json FILE): the lowest-risk "
                 "nodes are chosen over spares, workers get TITAN_CHECKPOINT_INTERVAL_S "
                 "(Young/Daly with the job's MTBF from its nodes' risk), and --drain-risk applies");
  app.add_option("--drain-risk", o.drain_risk,
                 "with --risk: a node whose P(failure within the horizon) is at least this stays "
                 "out of the job when its expected lost work exceeds the cost of moving it "
                 "(the arithmetic is in the 'drain' event; 0: never)")
      ->check(CLI::Range(0.0, 1.0));
  AddDurationOption(app, "--checkpoint-cost", &o.checkpoint_cost_ns,
                    "with --risk: one checkpoint's stall, delta in Young/Daly", kNsPerSecond / 1000,
                    86400 * kNsPerSecond);
  AddDurationOption(app, "--move-cost", &o.move_cost_ns,
                    "with --risk: what a restart onto a spare costs the job (drain arithmetic)",
                    kNsPerSecond / 1000, 86400 * kNsPerSecond);
  app.add_option("--inject", injections, "fault injection, e.g. crash@rank=1,step=50 (repeatable)");
  app.add_option("--seed", o.seed, "seed of drawn injection targets");
  app.add_option("--lease-ttl", o.lease_ttl_seconds, "etcd lease TTL in seconds (lost-node bound)")
      ->check(CLI::Range(1, 3600));
  AddDurationOption(app, "--last-call", &o.last_call_ns,
                    "how long a rendezvous waits for more nodes after MIN joined", 0,
                    3600 * kNsPerSecond);
  AddDurationOption(app, "--join-timeout", &o.join_timeout_ns,
                    "how long to wait for --nnodes MIN nodes", kNsPerSecond,
                    10'000'000 * kNsPerSecond);
  AddDurationOption(app, "--finish-timeout", &o.finish_timeout_ns,
                    "once every local worker exited 0: how long an unreachable etcd may keep titan "
                    "run from confirming that the other nodes finished too, before it exits 0 on "
                    "the local result",
                    kNsPerSecond / 1000, 86400 * kNsPerSecond);
  AddDurationOption(app, "--stack-wait", &o.stack_wait_ns,
                    "how long to wait for a hung worker's stack dump", 0, 600 * kNsPerSecond);
  app.add_flag("--quiet", o.quiet, "no summary at the end");
  // torchrun's form: options end at the script; what follows is the script's (--lr 1 included).
  app.prefix_command();
  if (std::optional<int> done = ParseCommandLine(app, own_argc, argv)) return *done;
  script.script_and_args = app.remaining();
  if (!script.script_and_args.empty() && !command.empty()) {
    // A script came before the "--": the "--" and what follows are the script's arguments.
    script.script_and_args.push_back("--");
    script.script_and_args.insert(script.script_and_args.end(), command.begin(), command.end());
    command.clear();
  }
  if (command.empty()) {
    auto worker = supervisor::WorkerCommand(script);
    if (!worker.ok()) {
      std::fprintf(stderr, "titan run: %s\n", std::string(worker.status().message()).c_str());
      return 2;
    }
    command = std::move(worker).value();
  }
  auto resolved_nproc = supervisor::ResolveNprocPerNode(nproc);
  if (!resolved_nproc.ok()) {
    std::fprintf(stderr, "titan run: %s\n", std::string(resolved_nproc.status().message()).c_str());
    return 2;
  }
  o.nproc_per_node = *resolved_nproc;
  for (size_t i = 0; i < kIgnoredTorchrunFlags.size(); ++i) {
    const std::string flag = kIgnoredTorchrunFlags[i].substr(0, kIgnoredTorchrunFlags[i].find(','));
    if (app.count(flag) > 0) {
      std::fprintf(stderr, "titan run: ignoring torchrun's %s (see titan run --help)\n",
                   flag.c_str());
    }
  }
  if (!ParseNodes(nnodes, &o.min_nodes, &o.max_nodes)) {
    std::fprintf(stderr, "titan run: --nnodes '%s': expected N or MIN:MAX with 1 <= MIN <= MAX\n",
                 nnodes.c_str());
    return 2;
  }
  if (!rdzv_backend.empty() && rdzv_backend != "etcd" && rdzv_backend != "etcd-v2") {
    std::fprintf(stderr, "titan run: --rdzv-backend '%s': only etcd is supported\n",
                 rdzv_backend.c_str());
    return 2;
  }
  if (o.checkpoint_node_local && o.checkpoint_mirror.empty()) {
    std::fprintf(stderr,
                 "titan run: --checkpoint-node-local needs --checkpoint-mirror (the store where "
                 "every node's ranks commit)\n");
    return 2;
  }
  if (standalone && !o.etcd.empty()) {
    std::fprintf(stderr, "titan run: --standalone and --etcd exclude each other\n");
    return 2;
  }
  for (const std::string& spec : injections) {
    auto inj = supervisor::ParseInjection(spec);
    if (!inj.ok()) {
      std::fprintf(stderr, "titan run: %s\n", std::string(inj.status().message()).c_str());
      return 2;
    }
    o.injections.push_back(*inj);
  }
  char exe[4096];
  const ssize_t exe_len = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  const std::string self = exe_len > 0 ? std::string(exe, static_cast<size_t>(exe_len)) : "titan";
  for (const std::string& spec : on_isolate) {
    auto action = cluster::ParseIsolationAction(spec, self);
    if (!action.ok()) {
      std::fprintf(stderr, "titan run: %s\n", std::string(action.status().message()).c_str());
      return 2;
    }
    o.isolate_actions.push_back(std::move(action).value());
  }
  // Slurm: one task per node runs titan run; the job, its nodes and this node's name come from
  // the environment srun gives it (flags still win).
  auto slurm = cluster::ReadSlurmEnv([](const char* name) { return std::getenv(name); });
  if (!slurm.ok()) {
    std::fprintf(stderr, "titan run: %s\n", std::string(slurm.status().message()).c_str());
    return 2;
  }
  if (slurm->has_value()) {
    const cluster::SlurmEnv& env = **slurm;
    o.slurm_job_id = env.job_id;
    if (app.count("--job-id") == 0) o.job_id = "slurm-" + env.job_id;
    if (app.count("--nnodes") == 0) o.min_nodes = o.max_nodes = static_cast<int>(env.nodes.size());
    if (o.node_id.empty() && !env.node_name.empty()) o.node_id = env.node_name;
    if (o.scheduler_node.empty()) o.scheduler_node = env.node_name;
    if (o.etcd.empty() && env.nodes.size() > 1 && app.count("--nnodes") == 0) {
      auto plan = SlurmPlan(env);
      if (!plan.ok()) {
        std::fprintf(stderr, "titan run: %s\n", std::string(plan.status().message()).c_str());
        return 2;
      }
      o.plan = std::move(plan).value();
    }
  }
  // torchrun's static rendezvous: every node is told its rank and node rank 0's address.
  if (node_rank >= 0 || !master_addr.empty() || master_port > 0) {
    if (node_rank < 0 && o.max_nodes == 1) node_rank = 0;  // torchrun's default
    if (!o.etcd.empty()) {
      std::fprintf(stderr,
                   "titan run: --node-rank/--master-addr/--master-port are the static "
                   "rendezvous; with --etcd the nodes find each other (leave them out)\n");
      return 2;
    }
    if (o.min_nodes != o.max_nodes || node_rank < 0 || node_rank >= o.max_nodes) {
      std::fprintf(stderr,
                   "titan run: the static rendezvous needs --nnodes N (no MIN:MAX) and "
                   "--node-rank 0..N-1 on each node (got --nnodes %s, --node-rank %d)\n",
                   nnodes.c_str(), node_rank);
      return 2;
    }
    supervisor::StaticPlan plan;
    for (int i = 0; i < o.max_nodes; ++i) plan.members.push_back(fmt::format("node{}", i));
    plan.index = node_rank;
    plan.master_addr = master_addr.empty() ? "127.0.0.1" : master_addr;
    plan.master_port = master_port > 0 ? master_port : 29500;
    o.plan = std::move(plan);
    if (o.node_id.empty()) o.node_id = fmt::format("node{}", node_rank);
  }
  o.straggler_restart = straggler_action == "exclude";
  o.rank_logs = !no_rank_logs;
  o.flight_recorder = !no_flight_recorder;
  o.diagnose = !no_diagnose;
  // No output may overwrite a file of the worker command (its script) or another output.
  if (Status clash = RefuseClashingOutputs({{"--event-log", o.event_log},
                                            {"--ledger-json", o.ledger_json},
                                            {"--metrics-file", o.metrics_file}},
                                           command);
      !clash.ok()) {
    std::fprintf(stderr, "titan run: %s\n", std::string(clash.message()).c_str());
    return 2;
  }
  o.command = std::move(command);
  if (!risk_file.empty()) {
    auto table = predict::NodeRiskTable::Read(risk_file);
    if (!table.ok()) {
      std::fprintf(stderr, "titan run: --risk: %s\n",
                   std::string(table.status().message()).c_str());
      return kExitUsageError;
    }
    o.risk = std::make_shared<const predict::NodeRiskTable>(std::move(table).value());
  }
  return supervisor::RunSupervisor(o);
}

}  // namespace titan
