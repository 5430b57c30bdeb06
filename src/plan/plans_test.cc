// The training and serving plans on inputs whose answers can be checked by hand or by their
// definitions.
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/plan/capacity.h"
#include "src/plan/run_measurements.h"
#include "src/plan/serving_plan.h"
#include "src/plan/training_plan.h"

namespace titan::plan {
namespace {

using ::testing::HasSubstr;

constexpr double kDaySeconds = 86400;

TrainingJob SmallJob() {
  TrainingJob job;
  job.work_gpu_seconds = 256.0 * 20 * kDaySeconds;  // 20 days on 256 GPUs
  job.tensor_parallel = 8;
  job.pipeline_parallel = 4;  // replicas of 32 GPUs, 4 nodes
  job.gpus_per_node = 8;
  job.deadline_seconds = 12 * kDaySeconds;
  job.probability = 0.9;
  job.checkpoint_write_seconds = 60;
  job.checkpoint_stall_seconds = 5;
  job.checkpoint_load_seconds = 60;
  return job;
}

FleetFailures Rate(double per_thousand_node_days, double k = INFINITY) {
  FleetFailures f;
  sim::FailureCause c;
  c.name = "failure";
  c.per_node_second = per_thousand_node_days / 1000 / kDaySeconds;
  f.causes = {c};
  f.repair_seconds = 48 * 3600;
  f.dispersion_k = k;
  f.source = "test";
  return f;
}

// A run's events as titan run writes them (src/supervisor): two step windows, three
// checkpoints with their commits, one restart.
std::string RunEvents(bool async) {
  const std::string mode = async ? "true" : "false";
  const double background_ms = async ? 900 : 0;  // a sync checkpoint has no background part
  std::string events =
      R"({"type":"steps","ranks":[{"rank":0,"count":25,"p50_ms":75.7},{"rank":1,"count":25,"p50_ms":77.5}]})"
      "\n"
      R"({"type":"steps","ranks":[{"rank":0,"count":15,"p50_ms":76.1}]})"
      "\n"
      R"({"type":"restart","detect_to_exec_ms":358.2,"restart_count":1})"
      "\n";
  for (double blocking_ms : {102.9, 98.5, 100.1}) {
    events += fmt::format(R"({{"type":"checkpoint","async":{},"blocking_ms":{}}})"
                          "\n"
                          R"({{"type":"checkpoint_committed","background_ms":{}}})"
                          "\n",
                          mode, blocking_ms, background_ms);
  }
  return events;
}

constexpr std::string_view kRunLedger =
    R"({"world_size":2,"restarts":1,"ettr":0.45,"wall_seconds":6.9,"seconds":{"startup":2.9}})";

TEST(RunMeasurementsTest, ASyncCheckpointsWriteIsItsStall) {
  // A synchronous checkpoint's commit reports no background time: the write is the stall the
  // training saw, not 0 (which would leave a plan without a checkpoint cost).
  auto m = ParseRunFiles(kRunLedger, RunEvents(false), "run");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FALSE(m->checkpoint_async);
  EXPECT_NEAR(m->checkpoint_stall_seconds, 0.1001, 1e-9);
  EXPECT_NEAR(m->checkpoint_write_seconds, 0.1001, 1e-9);
  EXPECT_NEAR(m->step_seconds, 0.0761, 1e-9);
  EXPECT_NEAR(m->restart_seconds, 0.3582 + 2.9 / 2, 1e-9);
  EXPECT_EQ(m->world_size, 2);
}

// The fuzzer's input (CI, asan build): a count beyond int64 was cast, undefined behaviour.
TEST(RunMeasurementsTest, ACountOutOfRangeIsRefusedNotCast) {
  auto m =
      ParseRunFiles(R"({"ettr":0.9,"world_size":4,"restarts":1777777777777777777777777777777})",
                    RunEvents(false), "run");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().ToString(), HasSubstr("\"restarts\" is"));
}

TEST(RunMeasurementsTest, AnAsyncCheckpointsWriteIsItsBackgroundTime) {
  auto m = ParseRunFiles(kRunLedger, RunEvents(true), "run");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->checkpoint_async);
  EXPECT_NEAR(m->checkpoint_stall_seconds, 0.1001, 1e-9);
  EXPECT_NEAR(m->checkpoint_write_seconds, 0.9, 1e-9);
}

TEST(TrainingPlanTest, MeetsTheDeadlineWithWholeReplicasAndFewestGpus) {
  TrainingOptions o;
  o.replicas = 64;
  o.threads = 2;
  auto plan = PlanTraining(SmallJob(), Rate(6.5), o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->feasible) << plan->verdict;
  const PlanPoint& b = plan->best;
  EXPECT_EQ(b.gpus % 32, 0);
  EXPECT_GE(b.probability, 0.9);
  EXPECT_LE(b.wall_days_at_probability, 12);
  // 20 days of work on 256 GPUs in 12 days needs more than 256 * 20 / 12 = 427 GPUs.
  EXPECT_GT(b.gpus, 427);
  EXPECT_LE(static_cast<int>(plan->evaluated.size()), 100 + 3);
  // The search ends at the fewest: a replica fewer missed the target when it was tried.
  bool fewer_missed = false;
  for (const PlanPoint& p : plan->evaluated) {
    if (p.gpus == b.gpus - 32 && p.probability < 0.9) fewer_missed = true;
  }
  EXPECT_TRUE(fewer_missed);
  EXPECT_GT(b.ettr_mean, 0.8);
  EXPECT_LE(b.ettr_low, b.ettr_mean);
  EXPECT_GE(b.ettr_high, b.ettr_mean);
}

TEST(TrainingPlanTest, AFleetThatFailsMoreNeedsMore) {
  TrainingOptions o;
  o.replicas = 64;
  o.threads = 2;
  auto calm = PlanTraining(SmallJob(), Rate(2), o);
  auto rough = PlanTraining(SmallJob(), Rate(200), o);
  ASSERT_TRUE(calm.ok() && rough.ok());
  EXPECT_GT(rough->best.gpus + 8 * rough->best.spares, calm->best.gpus + 8 * calm->best.spares);
  EXPECT_LT(rough->best.ettr_mean, calm->best.ettr_mean);
}

TEST(TrainingPlanTest, AnImpossibleDeadlineSaysWhatToChange) {
  TrainingJob job = SmallJob();
  job.max_gpus = 256;
  TrainingOptions o;
  o.replicas = 16;
  auto plan = PlanTraining(job, Rate(6.5), o);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("raise --max-gpus"));
}

TEST(TrainingPlanTest, GammaStrataHaveMeanNearOne) {
  EXPECT_EQ(GammaMeanOneQuantile(INFINITY, 0.9), 1);
  double sum = 0;
  for (int i = 0; i < 4; ++i) sum += GammaMeanOneQuantile(3, (i + 0.5) / 4);
  EXPECT_NEAR(sum / 4, 1, 0.08);
  EXPECT_LT(GammaMeanOneQuantile(3, 0.125), GammaMeanOneQuantile(3, 0.875));
}

// A sweep: rates 1, 2, 4 pass; 8 fails; 16 passes (noise beyond the knee must not count).
std::string Sweep() {
  auto probe = [](double rate, double p99_ttft_ms, int failed) {
    return fmt::format(
        R"({{"rate":{},"passed":true,"run":{{"elapsed_s":10,"requests":{{"planned":{},"ok":{},)"
        R"("failed":{}}},"tokens":{{"prompt":{},"output":{}}},"latency":{{"ttft":{{"p99_ms":{},)"
        R"("p50_ms":10,"mean_ms":20}},"itl":{{"p99_ms":5}}}}}}}})",
        rate, rate * 10, rate * 10 - failed, failed, rate * 10 * 100, rate * 10 * 20, p99_ttft_ms);
  };
  return fmt::format(
      R"({{"kind":"titan.load.sweep","config":{{"slo":"p99_ttft=500ms"}},"probes":[{},{},{},{},{},{}]}})",
      probe(1, 50, 0), probe(2, 80, 0), probe(4, 300, 0), probe(4, 450, 0), probe(8, 900, 0),
      probe(16, 100, 0));
}

TEST(CapacityTest, TheKneeIsTheLargestRateBelowTheFirstMiss) {
  auto c = ReadCapacity(Sweep(), "sweep.json", "");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->knee_rate, 4);
  EXPECT_DOUBLE_EQ(c->goodput_rps, 4);  // 40 requests in 10 s, both repeats
  EXPECT_DOUBLE_EQ(c->tokens_per_request, 120);
  EXPECT_EQ(c->first_failing_rate, 8);
  EXPECT_THAT(c->why_next_fails, HasSubstr("p99_ttft=500ms 900.0ms"));
  // A stricter SLO: 4/s misses in one repeat, so 2/s is the knee.
  auto strict = ReadCapacity(Sweep(), "sweep.json", "p99_ttft=400ms");
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->knee_rate, 2);
  auto none = ReadCapacity(Sweep(), "sweep.json", "p99_ttft=10ms");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("lower --start-rate"));
  EXPECT_FALSE(ReadCapacity("{\"kind\":\"titan.load.run\"}", "x.json", "").ok());
}

TEST(ServingPlanTest, ReplicasCoverTheQuantileOfThePeakWithFailureHeadroom) {
  Forecast peak, mean;
  peak.step_seconds = mean.step_seconds = 3600;
  peak.quantile_levels = {0.5, 0.9};
  peak.quantiles = {{5, 10, 20}, {9, 12, 41}};
  peak.point = {5, 10, 20};
  mean.point = {4, 8, 16};
  Capacity c;
  c.slo = "p99_ttft=500ms";
  c.goodput_rps = 4;
  c.tokens_per_request = 1000;
  ServingOptions o;
  o.quantile = 0.9;
  o.replica_failures_per_day = 24;  // one an hour
  o.restart_seconds = 360;          // 0.1 h: 0.1 replicas down per needed replica
  o.headroom_probability = 0.99;
  o.gpus_per_replica = 2;
  o.price_per_gpu_hour = 3;
  auto plan = PlanServing(peak, mean, "requests/s", c, o);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->steps.size(), 3u);
  EXPECT_EQ(plan->steps[0].needed, 3);   // ceil(9 / 4)
  EXPECT_EQ(plan->steps[1].needed, 3);   // ceil(12 / 4): exactly 3
  EXPECT_EQ(plan->steps[2].needed, 11);  // ceil(41 / 4)
  // Poisson(0.3) 99%: 2; Poisson(1.1) 99%: 4.
  EXPECT_EQ(plan->steps[0].spare, 2);
  EXPECT_EQ(plan->steps[2].spare, 4);
  EXPECT_EQ(plan->max_replicas, 15);
  EXPECT_NEAR(plan->steps[2].utilisation, 16.0 / (15 * 4), 1e-12);
  const double gpu_hours = (5 + 5 + 15) * 2;
  EXPECT_NEAR(plan->gpu_hours, gpu_hours, 1e-9);
  const double tokens = (4 + 8 + 16) * 3600.0 * 1000;
  EXPECT_NEAR(plan->cost_per_million_tokens, gpu_hours * 3 / tokens * 1e6, 1e-9);
}

}  // namespace
}  // namespace titan::plan
