// Validation of the simulator against published runs and closed-form models. Each test names
// its source. Confidence intervals come from the replicas; runs are deterministic per seed.
#include "src/sim/engine.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "src/sim/failure_model.h"
#include "src/sim/formulas.h"
#include "src/sim/policies.h"
#include "src/sim/scenario_text.h"
#include "src/sim/simulate.h"

namespace titan::sim {
namespace {

using nlohmann::json;

// The tree of a preset with dotted overrides applied.
json PresetWith(const std::string& preset,
                std::initializer_list<std::pair<const char*, const char*>> overrides) {
  Result<json> tree = LoadScenarioTree(preset);
  TITAN_CHECK(tree.ok()) << tree.status().ToString();
  for (const auto& [key, value] : overrides) {
    TITAN_CHECK(SetTreePath(&*tree, key, value).ok()) << key;
  }
  return *tree;
}

Scenario ScenarioOf(const json& tree) {
  Result<Scenario> s = ParseScenario(tree);
  TITAN_CHECK(s.ok()) << s.status().ToString();
  return *s;
}

SimSummary Simulated(const json& tree) {
  Result<SimSummary> summary = Simulate(ScenarioOf(tree));
  TITAN_CHECK(summary.ok()) << summary.status().ToString();
  return *summary;
}

double Share(const SimSummary& s, Category c) { return s.share[static_cast<size_t>(c)].mean; }

// Source: "The Llama 3 Herd of Models" (Meta, 2024), section 3.3.4 and table 5: 16,384 H100
// GPUs, 54 days, 419 unexpected interruptions; >90% effective training time.
TEST(EngineValidationTest, Llama3InterruptionsCauseMixAndEttr) {
  const SimSummary s = Simulated(PresetWith("llama3-16k", {{"run.replicas", "200"}}));
  // The mean count is 419 within the Monte Carlo interval...
  EXPECT_NEAR(s.interruptions.mean, 419, 3 * s.interruptions.ci95 / 1.96 + 1)
      << "ci95 " << s.interruptions.ci95;
  // ... and spreads like a Poisson count: standard deviation about sqrt(419) = 20.5.
  EXPECT_NEAR(s.interruptions.stddev, std::sqrt(419.0), 0.2 * std::sqrt(419.0));
  // The cause mix is the table's (counts, not the printed percentages).
  for (size_t i = 0; i < s.by_cause.size(); ++i) {
    const TableEntry entry = Llama3Table()[i];
    EXPECT_EQ(s.by_cause[i].cause, entry.cause);
    const double sd = std::sqrt(static_cast<double>(entry.count)) / std::sqrt(200.0);
    EXPECT_NEAR(s.by_cause[i].count.mean, entry.count, 4 * sd + 0.5) << entry.cause;
  }
  // Checkpoint and restart in minutes keep ETTR above 90%.
  EXPECT_GT(s.ettr.low(), 0.90);
  EXPECT_LT(s.ettr.high(), 1.0);
}

// Source: Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
// Clusters" (Meta, 2024): with 6.50 failures per 1,000 node-days (RSC-1), job MTTF is 1.8 h at
// 16,384 GPUs and about 0.23 h at 131,072: it falls as 1/N.
TEST(EngineValidationTest, MetaJobMttfFallsAsOneOverN) {
  double mttf_hours[2];
  const char* sizes[2] = {"16384", "131072"};
  for (int i = 0; i < 2; ++i) {
    const SimSummary s =
        Simulated(PresetWith("meta-rsc", {{"cluster.gpus", sizes[i]},
                                          {"run.duration_days", "10"},
                                          {"run.replicas", "40"},
                                          {"cluster.spares", i == 0 ? "64" : "512"}}));
    EXPECT_NEAR(s.job_mtbf_seconds / kSecondsPerHour, i == 0 ? 1.80 : 0.225, 0.01);
    mttf_hours[i] = s.wall_days.mean * 24 / s.interruptions.mean;
    const double relative_ci = s.interruptions.ci95 / s.interruptions.mean;
    EXPECT_NEAR(mttf_hours[i], i == 0 ? 1.8 : 0.23, (i == 0 ? 1.8 : 0.23) * (relative_ci + 0.03))
        << sizes[i] << " GPUs";
  }
  EXPECT_NEAR(mttf_hours[0] / mttf_hours[1], 8.0, 0.4);
}

// Source: Daly (2006), complete model: E[wall] = sum over segments of M e^(R/M) (e^(L/M) - 1).
// Where its assumptions hold (exponential failures, sync checkpoints, failures may hit restarts,
// nodes always available) the simulated mean wall time must agree within the Monte Carlo
// interval. We use a 99% interval (2.58 standard errors) so that three cases at fixed seeds do
// not fail by the 5% chance of a 95% interval.
TEST(EngineValidationTest, AgreesWithDalysCompleteModelWhereItsAssumptionsHold) {
  for (const char* mtbf_hours : {"24", "6", "0.25"}) {
    json tree = PresetWith("daly", {{"run.replicas", "400"}});
    tree["failures"]["causes"][0]["job_mtbf_hours"] = std::stod(mtbf_hours);
    if (std::string(mtbf_hours) == "0.25") tree["job"]["steps"] = 3000;  // 50 h of work
    const Scenario scenario = ScenarioOf(tree);
    const SimSummary s = Simulated(tree);
    const double work = scenario.job.steps * 60.0;
    const double expected =
        ExpectedWallSeconds(work, s.interval_seconds, 300, 600, s.job_mtbf_seconds) /
        kSecondsPerDay;
    EXPECT_NEAR(s.wall_days.mean, expected, s.wall_days.ci95 / 1.96 * 2.58)
        << "MTBF " << mtbf_hours << " h; simulated " << s.wall_days.mean << " ± "
        << s.wall_days.ci95 << " days, Daly " << expected;
    EXPECT_EQ(s.finished_fraction, 1.0);
  }
}

// Source: Daly (2006) table: the optimum for checkpoint 5 min, restart 10 min, MTBF 6 h is
// about 57 min. The simulator's own search (common random numbers) must land near it.
TEST(EngineValidationTest, SearchedIntervalLandsNearDalysOptimum) {
  json tree = PresetWith("daly", {{"checkpoint.interval", "searched"}, {"run.replicas", "200"}});
  tree["failures"]["causes"][0]["job_mtbf_hours"] = 6;
  const SimSummary s = Simulated(tree);
  EXPECT_NEAR(s.searched_seconds / 60, 57, 0.2 * 57) << "searched " << s.searched_seconds / 60;
  EXPECT_NEAR(s.daly_seconds / 60, 57, 0.5);
}

TEST(EngineTest, LedgerAddsUpToWallTimeInEveryReplica) {
  for (const char* mode : {"sync", "async", "in_memory", "incremental"}) {
    json tree = PresetWith("llama3-16k", {{"run.duration_days", "5"}});
    tree["checkpoint"] = {{"mode", mode}, {"write_seconds", 120}, {"load_seconds", 60}};
    if (std::string(mode) == "async") tree["checkpoint"]["blocking_seconds"] = 10;
    if (std::string(mode) == "in_memory") {
      tree["checkpoint"]["memory_seconds"] = 5;
      tree["checkpoint"]["persist_every"] = 4;
      tree["checkpoint"]["memory_survival"] = 0.9;
    }
    if (std::string(mode) == "incremental") tree["checkpoint"]["full_every"] = 5;
    tree["recovery"]["policy"] = "shrink";
    tree["cluster"]["spares"] = 2;
    const Scenario scenario = ScenarioOf(tree);
    const EngineModel model = MakeEngineModel(scenario, 600, 6);
    for (uint64_t i = 0; i < 5; ++i) {
      const ReplicaResult r = RunReplica(model, 7, i);
      EXPECT_NEAR(r.ledger.Total(), r.wall_seconds, 1e-6 * r.wall_seconds) << mode;
      EXPECT_NEAR(r.wall_seconds, 5 * kSecondsPerDay, 1e-6) << mode;
      for (double seconds : r.ledger.seconds) EXPECT_GE(seconds, -1e-6) << mode;
      EXPECT_GT(r.checkpoints, 0) << mode;
    }
  }
}

TEST(EngineTest, SameResultsForAnyThreadCount) {
  const Scenario scenario = ScenarioOf(PresetWith("llama3-16k", {{"run.duration_days", "3"}}));
  const EngineModel model = MakeEngineModel(scenario, 900, 6);
  const std::vector<ReplicaResult> one = RunReplicas(model, 42, 16, 1).value();
  const std::vector<ReplicaResult> three = RunReplicas(model, 42, 16, 3).value();
  ASSERT_EQ(one.size(), three.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].interruptions, three[i].interruptions);
    EXPECT_EQ(one[i].ledger.seconds, three[i].ledger.seconds);
  }
  EXPECT_NE(RunReplicas(model, 43, 1, 1).value()[0].ledger.seconds, one[0].ledger.seconds);
}

// Infant mortality (Weibull shape 0.2) with near-instant repairs: a repaired node is new and
// fails again at once, so simulated time stalled while events and memory grew without end
// (1.2 GB after 50 s). The replica stops at kMaxEventsPerReplica and the run says why.
TEST(EngineTest, CascadingFailuresStopWithAClearErrorInsteadOfRunningForever) {
  const Scenario scenario =
      ScenarioOf(PresetWith("llama3-16k", {{"failures.distribution", "weibull"},
                                           {"failures.weibull_shape", "0.2"},
                                           {"cluster.repair_hours", "0.0001"}}));
  EngineModel model = MakeEngineModel(scenario, 900, 6);
  model.max_events = 200'000;  // the default, 3e7, takes 20 s here (minutes under sanitizers)
  Result<std::vector<ReplicaResult>> results = RunReplicas(model, 1, 4, 2);
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(results.status().message().find("more than 200000 failure and repair events before "
                                            "the horizon: the failures cascade"),
            std::string_view::npos)
      << results.status().message();
  EXPECT_TRUE(RunReplica(model, 1, 0).cascaded);
}

// Policies: without spares the job waits for repairs; shrinking trades waiting for degraded
// throughput; spares avoid both.
TEST(EngineTest, SparesShrinkAndWaitTradeOffAsExpected) {
  auto run = [](const char* policy, const char* spares) {
    json tree = PresetWith("llama3-16k", {{"run.duration_days", "20"},
                                          {"run.replicas", "20"},
                                          {"recovery.policy", policy},
                                          {"cluster.spares", spares},
                                          {"cluster.repair_hours", "24"}});
    return Simulated(tree);
  };
  const SimSummary wait = run("wait", "0");
  const SimSummary shrink = run("shrink", "0");
  const SimSummary spares = run("spares", "64");
  EXPECT_GT(Share(wait, Category::kWaiting), 0.3);  // every hardware failure waits ~24 h
  EXPECT_EQ(Share(wait, Category::kDegraded), 0);
  EXPECT_GT(Share(shrink, Category::kDegraded), 0);
  EXPECT_LT(Share(shrink, Category::kWaiting), Share(wait, Category::kWaiting));
  EXPECT_LT(Share(spares, Category::kWaiting), 0.001);
  EXPECT_GT(spares.ettr.low(), shrink.ettr.high());
  EXPECT_GT(shrink.ettr.low(), wait.ettr.high());
}

// Async checkpoints stall less but lose more work (a failure before the write finishes falls
// back a checkpoint); in-memory checkpoints that survive lose the least.
TEST(EngineTest, CheckpointModesTradeStallForLostWork) {
  auto run = [](json checkpoint) {
    json tree = PresetWith("llama3-16k", {{"run.duration_days", "20"}, {"run.replicas", "30"}});
    checkpoint["interval"] = "fixed";
    checkpoint["interval_minutes"] = 30;
    checkpoint["write_seconds"] = 300;
    tree["checkpoint"] = checkpoint;
    return Simulated(tree);
  };
  const SimSummary sync = run({{"mode", "sync"}});
  const SimSummary async = run({{"mode", "async"}, {"blocking_seconds", 10}});
  const SimSummary memory =
      run({{"mode", "in_memory"}, {"memory_seconds", 10}, {"persist_every", 6}});
  EXPECT_LT(Share(async, Category::kCheckpoint), Share(sync, Category::kCheckpoint));
  EXPECT_GT(Share(async, Category::kLostWork), Share(sync, Category::kLostWork));
  EXPECT_LT(Share(memory, Category::kLostWork), Share(async, Category::kLostWork));
  EXPECT_GT(async.ettr.mean, sync.ettr.mean);
}

// Weibull infant mortality (shape < 1): at the same long-run rate, fresh or freshly repaired
// nodes fail more often early, so a 2-day window on a new cluster sees more failures than the
// exponential model (and Daly's formula) predicts. Documented in docs/sim.md.
TEST(EngineTest, WeibullInfantMortalityRaisesEarlyFailures) {
  auto run = [](const char* distribution, const char* age_days) {
    json tree = PresetWith("meta-rsc", {{"run.duration_days", "2"},
                                        {"run.replicas", "50"},
                                        {"failures.distribution", distribution},
                                        {"failures.weibull_shape", "0.6"},
                                        {"failures.initial_age_days", age_days}});
    return Simulated(tree);
  };
  const SimSummary exponential = run("exponential", "0");
  const SimSummary weibull = run("weibull", "0");
  EXPECT_GT(weibull.interruptions.low(), 1.5 * exponential.interruptions.high());
  EXPECT_LT(weibull.ettr.high(), exponential.ettr.low());
  // A year-old cluster is past infant mortality: its hazard (k/s)(a/s)^(k-1) is now below the
  // long-run mean rate, so it fails less often than the exponential model says.
  const SimSummary aged = run("weibull", "365");
  EXPECT_LT(aged.interruptions.high(), exponential.interruptions.low());
  // The exponential model is memoryless: age changes nothing.
  EXPECT_EQ(run("exponential", "365").interruptions.mean, exponential.interruptions.mean);
}

// Failures during restart restart the restart (Daly's assumption); with long restarts relative
// to the MTBF, the first-order picture (restart cost R per failure) underestimates recovery.
TEST(EngineTest, FailuresDuringRestartLengthenRecovery) {
  json tree = PresetWith("daly", {{"run.replicas", "200"}, {"recovery.restart_seconds", "1800"}});
  tree["failures"]["causes"][0]["job_mtbf_hours"] = 1;
  tree["job"]["steps"] = 600;
  const SimSummary s = Simulated(tree);
  const double restart_per_failure =
      Share(s, Category::kRestart) * s.wall_days.mean * kSecondsPerDay / s.interruptions.mean;
  // Each failure that hits a restart wastes part of one; the mean restart time per failure is
  // below R (some restarts are cut short) but the number of restarts per job rises.
  EXPECT_LT(restart_per_failure, 1800);
  const double first_order_wall = 600 * 60 + (600 * 60.0 / 3600) * (1800 + s.interval_seconds / 2);
  EXPECT_GT(s.wall_days.mean * kSecondsPerDay, first_order_wall);
}

}  // namespace
}  // namespace titan::sim
