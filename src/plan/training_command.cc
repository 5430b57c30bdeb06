// `titan plan training`: flags (or a titan run directory) + a fleet history (or a rate) ->
// PlanTraining -> the plan.
#include "src/plan/training_command.h"

#include <cmath>

#include <fmt/format.h>

#include "src/base/atomic_file.h"
#include "src/base/command_line.h"
#include "src/base/duration_option.h"
#include "src/base/text.h"
#include "src/plan/command_support.h"
#include "src/plan/failure_fit.h"
#include "src/plan/failures_command.h"
#include "src/plan/run_measurements.h"
#include "src/plan/training_plan.h"

namespace titan::plan {

namespace {

struct Flags {
  double params = 0, tokens = 0, gpu_hours = 0, mfu = 0, peak_tflops = 989;
  int64_t step_time_ns = 0;
  double tokens_per_step = 0;
  int64_t steps = 0, step_gpus = 0;
  std::string run_dir;
  std::vector<std::string> history;
  std::vector<std::string> restart_only;
  std::string history_unit = "gpu";
  int64_t fit_window_ns = 90 * kDayNs;
  double failure_rate = 0;  // per 1,000 node-days
  int64_t repair_ns = 0;
  double dispersion_k = 0;
  int64_t deadline_ns = 0, write_ns = 0, stall_ns = -1, load_ns = 0;
  int64_t detect_ns = 60 * kSecondNs, restart_ns = 5 * 60 * kSecondNs;
  std::string checkpoint_mode = "async";
  std::string json_path;
};

// The job's work in GPU-seconds at the reference scale, and that scale.
Result<std::pair<double, int64_t>> Work(const Flags& f, const RunMeasurements* run,
                                        int64_t reference_flag) {
  if (f.gpu_hours > 0) return std::pair{f.gpu_hours * 3600, reference_flag};
  if (run != nullptr && f.steps > 0) {
    const int64_t gpus = f.step_gpus > 0 ? f.step_gpus : run->world_size;
    return std::pair{static_cast<double>(f.steps) * run->step_seconds * static_cast<double>(gpus),
                     gpus};
  }
  if (f.steps > 0 && f.step_time_ns > 0 && f.step_gpus > 0) {
    return std::pair{static_cast<double>(f.steps) * static_cast<double>(f.step_time_ns) / 1e9 *
                         static_cast<double>(f.step_gpus),
                     f.step_gpus};
  }
  if (!(f.params > 0 && f.tokens > 0)) {
    return InvalidArgumentError(
        "give the job's size: --params and --tokens (6 x params x tokens FLOPs), --gpu-hours, "
        "or --steps with --step-time and --step-gpus (or --run DIR)");
  }
  const double flops = 6 * f.params * f.tokens;
  if (f.step_time_ns > 0) {
    if (!(f.tokens_per_step > 0) || f.step_gpus <= 0) {
      return InvalidArgumentError("--step-time needs --tokens-per-step and --step-gpus");
    }
    const double per_gpu = 6 * f.params * f.tokens_per_step /
                           (static_cast<double>(f.step_time_ns) / 1e9) /
                           static_cast<double>(f.step_gpus);
    return std::pair{flops / per_gpu, f.step_gpus};
  }
  if (!(f.mfu > 0 && f.mfu <= 1)) {
    return InvalidArgumentError("give --mfu (0 to 1) or --step-time for the achieved speed");
  }
  return std::pair{flops / (f.mfu * f.peak_tflops * 1e12), reference_flag};
}

Result<FleetFailures> Failures(const Flags& f, int64_t gpus_per_node) {
  FleetFailures fleet;
  if (!f.history.empty()) {
    TITAN_ASSIGN_OR_RETURN(fleet::FleetHistory history, LoadFleetHistory(f.history));
    const FailureCounts counts(history);
    FitOptions options;
    options.window_days = static_cast<double>(f.fit_window_ns / kDayNs);
    options.restart_only = f.restart_only;
    TITAN_ASSIGN_OR_RETURN(FailureFit fit, FitFailures(history, counts, options));
    std::fputs(FormatFit(fit).c_str(), stderr);
    const double per_node = f.history_unit == "node" ? 1 : static_cast<double>(gpus_per_node);
    for (const ClassRate& c : fit.classes) {
      sim::FailureCause cause;
      cause.name = c.name;
      cause.per_node_second = c.per_component_day * per_node / kDaySeconds;
      cause.needs_repair = c.needs_repair;
      if (cause.per_node_second > 0) fleet.causes.push_back(cause);
    }
    fleet.repair_seconds = fit.repair_mean_hours * 3600;
    fleet.dispersion_k = fit.dispersion_k;
    fleet.source = fmt::format("fitted to {} ({} d window, per {} x {})",
                               Excerpt(f.history.front(), 60), f.fit_window_ns / kDayNs,
                               f.history_unit, f.history_unit == "node" ? 1 : gpus_per_node);
    if (f.repair_ns > 0 || fit.repairs_measured == 0) {
      if (f.repair_ns == 0) {
        return InvalidArgumentError(
            "the history has no measurable repairs (no repair records, no refilled node_name): "
            "give --repair (e.g. 72h)");
      }
      fleet.repair_seconds = static_cast<double>(f.repair_ns) / 1e9;
    }
    if (f.dispersion_k > 0) fleet.dispersion_k = f.dispersion_k;
    if (fleet.causes.empty()) {
      return InvalidArgumentError(
          "the history has no failures in the fit window: widen --fit-window or give "
          "--failure-rate");
    }
    return fleet;
  }
  if (!(f.failure_rate > 0) || f.repair_ns <= 0) {
    return InvalidArgumentError(
        "give the fleet's failures: --history FILE... (fitted), or --failure-rate (per 1,000 "
        "node-days) with --repair");
  }
  sim::FailureCause cause;
  cause.name = "failure";
  cause.per_node_second = f.failure_rate / 1000 / kDaySeconds;
  fleet.causes.push_back(cause);
  fleet.repair_seconds = static_cast<double>(f.repair_ns) / 1e9;
  fleet.dispersion_k = f.dispersion_k > 0 ? f.dispersion_k : INFINITY;
  fleet.source = fmt::format("{:g} failures per 1,000 node-days (given)", f.failure_rate);
  return fleet;
}

}  // namespace

int TrainingCommand(int argc, char** argv) {
  CLI::App app{
      "titan plan training: the GPUs, hot spare nodes and checkpoint interval that finish a job\n"
      "by its deadline with a chosen probability at the least cost, on a fleet that fails as its\n"
      "history says; titan sim's engine simulates each candidate of an adaptive search (a\n"
      "Young/Daly prefilter, then at most --max-points candidates).\n\n"
      "Examples:\n"
      "  titan plan training --params 405e9 --tokens 15.6e12 --mfu 0.4 --tp 8 --pp 16 \\\n"
      "      --deadline 90d --checkpoint-write 120s --checkpoint-stall 15s --history fleet.jsonl\n"
      "  titan plan training --gpu-hours 3e7 --tp 8 --pp 8 --deadline 60d --checkpoint-write 60s "
      "\\\n"
      "      --failure-rate 6.5 --repair 72h --price 2.5\n"
      "  titan plan training --run run-dir/ --steps 200000 --history run-dir/events.jsonl "
      "--history-unit node --deadline 30d --repair 24h\n",
      "titan plan training"};
  Flags f;
  TrainingJob job;
  TrainingOptions options;
  double deadline_probability = 0.9;
  app.add_option("--params", f.params, "Model parameters (e.g. 405e9)");
  app.add_option("--tokens", f.tokens, "Training tokens (e.g. 15.6e12)");
  app.add_option("--gpu-hours", f.gpu_hours, "Or: compute GPU-hours at the reference scale");
  app.add_option("--mfu", f.mfu, "Model FLOPs utilisation (0-1) at the reference scale");
  app.add_option("--peak-tflops", f.peak_tflops, "Peak dense TFLOP/s per GPU (H100 BF16: 989)");
  AddDurationOption(app, "--step-time", &f.step_time_ns,
                    "Or: a measured step time (with --tokens-per-step, --step-gpus)", 0, kDayNs);
  app.add_option("--tokens-per-step", f.tokens_per_step, "Tokens per step (global batch)");
  app.add_option("--steps", f.steps, "Steps to train (with --step-time or --run)");
  app.add_option("--step-gpus", f.step_gpus, "GPUs the step time was measured on");
  app.add_option("--run", f.run_dir,
                 "A titan run directory (ledger.json, events.jsonl): its step time, checkpoint "
                 "and restart times and world size; give --steps");
  app.add_option("--tp", job.tensor_parallel, "Tensor-parallel size")->check(CLI::Range(1, 4096));
  app.add_option("--pp", job.pipeline_parallel, "Pipeline-parallel size")
      ->check(CLI::Range(1, 4096));
  app.add_option("--gpus-per-node", job.gpus_per_node, "GPUs per node")->check(CLI::Range(1, 64));
  app.add_option("--scaling-efficiency", job.scaling_efficiency,
                 "Throughput kept per doubling of GPUs beyond --reference-gpus (0-1]")
      ->check(CLI::Range(0.01, 1.0));
  app.add_option("--reference-gpus", job.reference_gpus,
                 "Where the speed was measured (default: --step-gpus, or one replica)");
  AddDurationOption(app, "--deadline", &f.deadline_ns, "Wall-clock time to finish in", kSecondNs,
                    3650 * kDayNs)
      ->required();
  app.add_option("--probability", deadline_probability, "Of finishing by the deadline")
      ->check(CLI::Range(0.01, 0.999));
  app.add_option("--checkpoint-mode", f.checkpoint_mode, "async (default) or sync")
      ->check(CLI::IsMember({"async", "sync"}));
  AddDurationOption(app, "--checkpoint-write", &f.write_ns, "A checkpoint's write to storage",
                    kSecondNs / 1000, kDayNs);
  AddDurationOption(app, "--checkpoint-stall", &f.stall_ns,
                    "async: the training's stall per checkpoint (default: a tenth of the write)", 0,
                    kDayNs);
  AddDurationOption(app, "--checkpoint-load", &f.load_ns, "Loading a checkpoint on restart", 0,
                    kDayNs);
  AddDurationOption(app, "--detect", &f.detect_ns, "Failure to detection", 0, kDayNs);
  AddDurationOption(app, "--restart", &f.restart_ns, "Detection to training again (no load)", 0,
                    kDayNs);
  app.add_option("--history", f.history,
                 "Fleet history (titan predict's formats): the failure rate per class, repair "
                 "times and their variation are fitted to it");
  app.add_option("--history-unit", f.history_unit,
                 "What the history's components are: gpu (rates x --gpus-per-node per node) or "
                 "node")
      ->check(CLI::IsMember({"gpu", "node"}));
  AddDurationOption(app, "--fit-window", &f.fit_window_ns, "The history's window for the rates",
                    kDayNs, 3650 * kDayNs);
  app.add_option("--restart-only", f.restart_only, "Failure classes that need no repair");
  app.add_option("--failure-rate", f.failure_rate,
                 "Or: failures per 1,000 node-days (Meta RSC-1: 6.5)");
  AddDurationOption(app, "--repair", &f.repair_ns, "A failed node's time away (exponential mean)",
                    0, 365 * kDayNs);
  app.add_option("--dispersion-k", f.dispersion_k,
                 "Negative binomial size of the failure count (default: fitted, or Poisson)");
  app.add_option("--max-gpus", job.max_gpus, "Largest job to consider");
  app.add_option("--price", job.price_per_gpu_hour, "Price per GPU-hour (spares included)");
  app.add_option("--replicas", options.replicas, "Monte Carlo runs per candidate")
      ->check(CLI::Range(8, 100000));
  app.add_option("--max-points", options.max_points, "Simulated candidates at most")
      ->check(CLI::Range(4, 10000));
  app.add_option("--seed", options.seed, "Random seed");
  app.add_option("--threads", options.threads, "Simulation threads (0: all cores)");
  app.add_option("--json", f.json_path, "Write the plan as JSON ('-': stdout)");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;

  std::optional<RunMeasurements> run;
  if (!f.run_dir.empty()) {
    auto measured = ReadRunDirectory(f.run_dir);
    if (!measured.ok()) return Fail(measured.status());
    run = *measured;
    std::fprintf(stderr,
                 "titan plan: %s: step %.3f s on %lld GPUs, checkpoint stall %.2f s (write %.2f "
                 "s), restart %.1f s, ETTR %.2f%%\n",
                 f.run_dir.c_str(), run->step_seconds, static_cast<long long>(run->world_size),
                 run->checkpoint_stall_seconds, run->checkpoint_write_seconds, run->restart_seconds,
                 100 * run->ettr);
    if (f.write_ns == 0 && run->checkpoint_write_seconds > 0) {
      f.write_ns = static_cast<int64_t>(run->checkpoint_write_seconds * 1e9);
      if (f.stall_ns < 0) f.stall_ns = static_cast<int64_t>(run->checkpoint_stall_seconds * 1e9);
      if (!run->checkpoint_async) f.checkpoint_mode = "sync";
    }
    if (run->restart_seconds > 0 && !app.count("--restart")) {
      f.restart_ns = static_cast<int64_t>(run->restart_seconds * 1e9);
    }
    job.measured_ettr = run->ettr;
  }
  auto work = Work(f, run ? &*run : nullptr, job.reference_gpus);
  if (!work.ok()) return Fail(work.status());
  if (f.write_ns <= 0) {
    return Fail(InvalidArgumentError("give --checkpoint-write (or a --run that checkpointed)"));
  }
  job.work_gpu_seconds = work->first;
  job.reference_gpus = work->second;
  job.deadline_seconds = static_cast<double>(f.deadline_ns) / 1e9;
  job.probability = deadline_probability;
  job.checkpoint_mode =
      f.checkpoint_mode == "sync" ? sim::CheckpointMode::kSync : sim::CheckpointMode::kAsync;
  job.checkpoint_write_seconds = static_cast<double>(f.write_ns) / 1e9;
  job.checkpoint_stall_seconds =
      f.stall_ns >= 0 ? static_cast<double>(f.stall_ns) / 1e9 : job.checkpoint_write_seconds / 10;
  job.checkpoint_stall_seconds =
      std::min(job.checkpoint_stall_seconds, job.checkpoint_write_seconds);
  job.checkpoint_load_seconds = static_cast<double>(f.load_ns) / 1e9;
  job.detection_seconds = static_cast<double>(f.detect_ns) / 1e9;
  job.restart_seconds = static_cast<double>(f.restart_ns) / 1e9;
  auto fleet = Failures(f, job.gpus_per_node);
  if (!fleet.ok()) return Fail(fleet.status());
  auto plan = PlanTraining(job, *fleet, options);
  if (!plan.ok()) return Fail(plan.status());
  if (!f.json_path.empty()) {
    if (Status s =
            WriteFileAtomically(f.json_path, TrainingPlanJson(job, *fleet, *plan).dump(1) + "\n");
        !s.ok()) {
      return Fail(s);
    }
  }
  if (f.json_path != "-") std::fputs(FormatTrainingPlan(job, *fleet, *plan).c_str(), stdout);
  return plan->feasible ? 0 : 3;
}

}  // namespace titan::plan
