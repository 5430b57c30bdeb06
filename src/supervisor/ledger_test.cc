#include "src/supervisor/ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "src/metrics/text_parse.h"

namespace titan::supervisor {
namespace {

constexpr int64_t kS = 1'000'000'000;

TEST(GoodputLedger, SplitsWallTimeAndMovesUnsavedWorkToLost) {
  GoodputLedger l;
  l.Start(Phase::kWaiting, 0);
  l.Enter(Phase::kStartup, 1 * kS);      // 1 s idle
  l.Enter(Phase::kProductive, 3 * kS);   // 2 s startup
  l.Enter(Phase::kCheckpoint, 13 * kS);  // 10 s productive
  l.Enter(Phase::kProductive, 14 * kS);  // 1 s checkpoint
  l.OnCheckpointSaved(100, 14 * kS);
  // 6 s more productive, then a hang that started 2 s before its detection at 20 s.
  l.OnFailure(18 * kS, 20 * kS);
  EXPECT_EQ(l.phase(), Phase::kRestart);
  l.Enter(Phase::kStartup, 21 * kS);     // 1 s restart
  l.Enter(Phase::kProductive, 22 * kS);  // 1 s startup
  l.Finish(30 * kS);                     // 8 s productive
  EXPECT_EQ(l.Ns(Phase::kWaiting, 30 * kS), 1 * kS);
  EXPECT_EQ(l.Ns(Phase::kStartup, 30 * kS), 3 * kS);
  EXPECT_EQ(l.Ns(Phase::kCheckpoint, 30 * kS), 1 * kS);
  EXPECT_EQ(l.Ns(Phase::kDetection, 30 * kS), 2 * kS);
  EXPECT_EQ(l.Ns(Phase::kLostWork, 30 * kS), 4 * kS);
  EXPECT_EQ(l.Ns(Phase::kRestart, 30 * kS), 1 * kS);
  EXPECT_EQ(l.Ns(Phase::kProductive, 30 * kS), 18 * kS);
  int64_t sum = 0;
  for (int i = 0; i < kPhaseCount; ++i) sum += l.Ns(static_cast<Phase>(i), 30 * kS);
  EXPECT_EQ(sum, l.WallNs(30 * kS));
  EXPECT_DOUBLE_EQ(l.Ettr(30 * kS), 18.0 / 30.0);
}

TEST(GoodputLedger, AnAsyncSaveMakesWorkSafeOnlyWhenItCommits) {
  GoodputLedger l;
  l.Start(Phase::kProductive, 0);
  l.Enter(Phase::kCheckpoint, 10 * kS);  // 10 s productive, then a save blocks 1 s
  l.Enter(Phase::kProductive, 11 * kS);
  l.OnCheckpointStaged(100, 11 * kS);
  EXPECT_EQ(l.last_checkpoint_step(), -1);  // staged is not saved
  l.OnCheckpointCommitted(100, 15 * kS);    // committed in the background 4 s later
  EXPECT_EQ(l.last_checkpoint_step(), 100);
  l.OnFailure(20 * kS, 20 * kS);  // a crash 9 s after the save returned
  l.Finish(20 * kS);
  // The 10 s before the save are safe; the 9 s after it (4 of them while it committed) are lost.
  EXPECT_EQ(l.Ns(Phase::kLostWork, 20 * kS), 9 * kS);
  EXPECT_EQ(l.Ns(Phase::kProductive, 20 * kS), 10 * kS);
}

TEST(GoodputLedger, AnAsyncSaveThatNeverCommitsSavesNothing) {
  GoodputLedger l;
  l.Start(Phase::kProductive, 0);
  l.OnCheckpointStaged(100, 10 * kS);
  l.OnFailure(12 * kS, 12 * kS);  // the workers died before the commit
  l.Finish(12 * kS);
  EXPECT_EQ(l.Ns(Phase::kLostWork, 12 * kS), 12 * kS);
  EXPECT_EQ(l.last_checkpoint_step(), -1);
}

TEST(GoodputLedger, FailureOutsideSteppingLosesNothingProductive) {
  GoodputLedger l;
  l.Start(Phase::kStartup, 0);
  l.OnFailure(0, 5 * kS);  // start-up hang: the time stays start-up
  l.Finish(6 * kS);
  EXPECT_EQ(l.Ns(Phase::kStartup, 6 * kS), 5 * kS);
  EXPECT_EQ(l.Ns(Phase::kDetection, 6 * kS), 0);
  EXPECT_EQ(l.Ns(Phase::kRestart, 6 * kS), 1 * kS);
}

TEST(GoodputLedger, OutputsNameEveryCategory) {
  GoodputLedger l;
  l.Start(Phase::kProductive, 0);
  l.OnRestart();
  l.Finish(10 * kS);
  nlohmann::json j = l.ToJson(10 * kS);
  EXPECT_DOUBLE_EQ(j["ettr"].get<double>(), 1.0);
  EXPECT_EQ(j["restarts"], 1);
  // titan's one goodput vocabulary, the same keys as titan sim's shares (sim's ReportTest).
  std::vector<std::string> keys;
  for (const auto& [key, value] : j["seconds"].items()) keys.push_back(key);
  EXPECT_THAT(keys,
              ::testing::UnorderedElementsAre("productive", "checkpoint", "lost_work", "detection",
                                              "restart", "startup", "waiting", "degraded"));
  std::string prom;
  ExpositionWriter writer(&prom);
  l.AppendPrometheus(10 * kS, writer);
  std::map<std::string, double> samples;
  const TextParseStats parsed = ParsePrometheusText(prom, [&](const PrometheusSample& s) {
    samples[std::string(s.name) + "{" + std::string(s.labels) + "}"] = s.value;
  });
  EXPECT_EQ(parsed.malformed_lines, 0u) << prom;
  EXPECT_DOUBLE_EQ(samples["titan_run_goodput_seconds{category=\"productive\"}"], 10.0) << prom;
  EXPECT_DOUBLE_EQ(samples["titan_run_ettr{}"], 1.0) << prom;
  EXPECT_DOUBLE_EQ(samples["titan_run_restarts{}"], 1.0) << prom;
  EXPECT_DOUBLE_EQ(samples["titan_run_isolation_actions_total{result=\"dry_run\"}"], 0.0) << prom;
  EXPECT_NE(prom.find("# TYPE titan_run_isolation_actions_total counter\n"), std::string::npos);
  EXPECT_NE(l.ToTable(10 * kS).find("ETTR"), std::string::npos);
}

}  // namespace
}  // namespace titan::supervisor
