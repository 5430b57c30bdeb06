#include "src/collectors/cpu_collector.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "src/base/clock.h"
#include "src/collectors/collector_test_util.h"

namespace titan {
namespace {

using testing::kSecond;
using testing::kT0;
using testing::ScratchRoots;
using testing::TestContext;

double Ticks() { return static_cast<double>(sysconf(_SC_CLK_TCK)); }

TEST(ParseProcStatTest, RecordedFile) {
  const std::string text = testing::ReadFileOrDie(testing::FixturePath("proc/snap1/stat"));
  ProcStat stat;
  ASSERT_TRUE(ParseProcStat(text, &stat).ok());
  ASSERT_TRUE(stat.has_total);
  EXPECT_EQ(stat.total.user, 15678u);
  EXPECT_EQ(stat.total.system, 4959u);
  EXPECT_EQ(stat.total.idle, 110959u);
  EXPECT_EQ(stat.total.iowait, 687u);
  EXPECT_EQ(stat.total.steal, 1428u);
  EXPECT_EQ(stat.total.Busy(), 22195u);
  ASSERT_EQ(stat.cpus.size(), 2u);
  EXPECT_EQ(stat.cpus[1].cpu, 1);
  EXPECT_EQ(stat.cpus[1].user, 7897u);
  EXPECT_EQ(stat.context_switches, 456694u);
  EXPECT_EQ(stat.forks, 10168u);
  EXPECT_EQ(stat.procs_running, 1u);
  EXPECT_EQ(stat.procs_blocked, 0u);
}

TEST(ParseProcStatTest, OldKernelHasFourColumnsNewKernelMore) {
  ProcStat stat;
  ASSERT_TRUE(ParseProcStat("cpu 1 2 3 4\ncpu0 1 2 3 4\n", &stat).ok());
  EXPECT_EQ(stat.total.idle, 4u);
  EXPECT_EQ(stat.total.iowait, 0u);
  ASSERT_TRUE(ParseProcStat("cpu 1 2 3 4 5 6 7 8 9 10 11 12 13\n", &stat).ok());
  EXPECT_EQ(stat.total.steal, 8u);
}

TEST(ParseProcStatTest, RejectsTruncatedAndGarbage) {
  ProcStat stat;
  EXPECT_EQ(ParseProcStat("cpu 1 2 3\n", &stat).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseProcStat("cpu 1 2 3 4 5x\n", &stat).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseProcStat("cpu 1 2 3 4\ncpu99999999 1 2 3 4\n", &stat).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseProcStat("intr 1 2\nctxt 5\n", &stat).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseProcStat("", &stat).code(), StatusCode::kInvalidArgument);
  Status status = ParseProcStat("cpu 1 2 3 4\ncpu0 1 x 3 4\n", &stat);
  EXPECT_NE(status.message().find("line 2"), std::string_view::npos) << status.ToString();
}

TEST(CpuCollectorTest, RecordedSnapshotsGiveExactNumbers) {
  ScratchRoots roots;
  roots.LoadProcSnapshot("snap1");
  TestContext t(roots.env());
  CpuCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  // One sample: counters are known, utilisation needs a second sample.
  EXPECT_DOUBLE_EQ(t.Counter("titan_cpu_busy_seconds_total{cpu=\"total\"}"), 22195 / Ticks());
  EXPECT_EQ(t.Samples("titan_cpu_utilization_ratio{cpu=\"total\"}"), 0u);

  roots.LoadProcSnapshot("snap2");
  ASSERT_TRUE(collector.Collect(kT0 + kSecond).ok());
  // total: busy 22195 -> 22300 (+105), idle +106, iowait +2.
  EXPECT_DOUBLE_EQ(t.Last("titan_cpu_utilization_ratio{cpu=\"total\"}"), 105.0 / 213.0);
  // cpu0: busy +3, idle +104; cpu1: busy +102, idle +2, iowait +3.
  EXPECT_DOUBLE_EQ(t.Last("titan_cpu_utilization_ratio{cpu=\"0\"}"), 3.0 / 107.0);
  EXPECT_DOUBLE_EQ(t.Last("titan_cpu_utilization_ratio{cpu=\"1\"}"), 102.0 / 107.0);
  EXPECT_DOUBLE_EQ(t.Counter("titan_cpu_busy_seconds_total{cpu=\"total\"}"), 22300 / Ticks());
  EXPECT_DOUBLE_EQ(t.Counter("titan_cpu_iowait_seconds_total{cpu=\"1\"}"), 630 / Ticks());
  EXPECT_DOUBLE_EQ(t.Counter("titan_context_switches_total"), 457020);
  EXPECT_DOUBLE_EQ(t.Counter("titan_processes_forked_total"), 10184);
  EXPECT_DOUBLE_EQ(t.Last("titan_processes_running"), 1);
  EXPECT_TRUE(t.invalid().empty());
}

TEST(CpuCollectorTest, TicksGoingBackwardsAreDroppedAndReported) {
  ScratchRoots roots;
  testing::WriteFile(roots.proc() / "stat", "cpu 100 0 100 800 50 0 0 0\n");
  TestContext t(roots.env());
  CpuCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  // iowait steps back from 50 to 40 (a known NO_HZ kernel glitch) while busy +20, idle +80.
  testing::WriteFile(roots.proc() / "stat", "cpu 110 0 110 880 40 0 0 0\n");
  ASSERT_TRUE(collector.Collect(kT0 + kSecond).ok());
  ASSERT_EQ(t.invalid().size(), 1u);
  EXPECT_DOUBLE_EQ(t.Last("titan_cpu_utilization_ratio{cpu=\"total\"}"), 0.2);
  // The counter keeps its previous value instead of counting a reset.
  EXPECT_DOUBLE_EQ(t.Counter("titan_cpu_iowait_seconds_total{cpu=\"total\"}"), 50 / Ticks());
  testing::WriteFile(roots.proc() / "stat", "cpu 120 0 120 900 60 0 0 0\n");
  ASSERT_TRUE(collector.Collect(kT0 + 2 * kSecond).ok());
  EXPECT_DOUBLE_EQ(t.Counter("titan_cpu_iowait_seconds_total{cpu=\"total\"}"), 60 / Ticks());
  // busy +20, idle +20, iowait +10 (from the kept 50).
  EXPECT_DOUBLE_EQ(t.Last("titan_cpu_utilization_ratio{cpu=\"total\"}"), 0.4);
}

// Issue 15 #14: one reading of 2^64-1 was exported (1.8e17 s of iowait, 1.8e19 context
// switches), and every normal reading after it looked like a step back, so the counters stayed
// stuck on the glitch.
TEST(CpuCollectorTest, AGlitchTo2Pow64IsNotExportedAndTheCountersRecover) {
  ScratchRoots roots;
  testing::WriteFile(roots.proc() / "stat", "cpu 100 0 100 800 50 0 0 0\nctxt 1000\n");
  TestContext t(roots.env());
  CpuCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  const std::string iowait = "titan_cpu_iowait_seconds_total{cpu=\"total\"}";
  const std::string utilization = "titan_cpu_utilization_ratio{cpu=\"total\"}";
  const auto collect_at = [&](int seconds, const std::string& stat) {
    testing::WriteFile(roots.proc() / "stat", stat);
    ASSERT_TRUE(collector.Collect(kT0 + seconds * kSecond).ok());
  };

  collect_at(1, "cpu 110 0 110 880 18446744073709551615 0 0 0\nctxt 18446744073709551615\n");
  EXPECT_DOUBLE_EQ(t.Counter(iowait), 50 / Ticks());
  EXPECT_DOUBLE_EQ(t.Counter("titan_context_switches_total"), 1000);
  EXPECT_EQ(t.Samples(utilization), 0u) << "an interval with a glitch has no utilisation";
  EXPECT_DOUBLE_EQ(t.Counter("titan_cpu_busy_seconds_total{cpu=\"total\"}"), 220 / Ticks());
  EXPECT_DOUBLE_EQ(
      t.Counter(
          "titan_collector_readings_dropped_total{collector=\"cpu\",reason=\"counter_jump\"}"),
      2);

  // Back to normal: one more interval is dropped (measured from the glitch), then all resumes.
  collect_at(2, "cpu 120 0 120 960 60 0 0 0\nctxt 2000\n");
  EXPECT_DOUBLE_EQ(t.Counter(iowait), 50 / Ticks());
  EXPECT_DOUBLE_EQ(t.Counter("titan_context_switches_total"), 1000);
  collect_at(3, "cpu 130 0 130 1040 70 0 0 0\nctxt 3000\n");
  EXPECT_DOUBLE_EQ(t.Counter(iowait), 60 / Ticks());
  EXPECT_DOUBLE_EQ(t.Counter("titan_context_switches_total"), 2000);
  EXPECT_DOUBLE_EQ(t.Last(utilization), 20.0 / 110.0);
  EXPECT_DOUBLE_EQ(
      t.Counter(
          "titan_collector_readings_dropped_total{collector=\"cpu\",reason=\"counter_reset\"}"),
      2);
  EXPECT_EQ(t.invalid().size(), 4u);
}

TEST(CpuCollectorTest, IntervalWithoutTicksIsMergedIntoTheNext) {
  ScratchRoots roots;
  testing::WriteFile(roots.proc() / "stat", "cpu 100 0 0 100 0 0 0 0\n");
  TestContext t(roots.env());
  CpuCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  ASSERT_TRUE(collector.Collect(kT0 + 10'000'000).ok());  // 10 ms later: no tick yet
  EXPECT_EQ(t.Samples("titan_cpu_utilization_ratio{cpu=\"total\"}"), 0u);
  testing::WriteFile(roots.proc() / "stat", "cpu 101 0 0 101 0 0 0 0\n");
  ASSERT_TRUE(collector.Collect(kT0 + 20'000'000).ok());
  EXPECT_DOUBLE_EQ(t.Last("titan_cpu_utilization_ratio{cpu=\"total\"}"), 0.5);
}

TEST(CpuCollectorTest, MalformedFileFailsCollectWithPath) {
  ScratchRoots roots;
  roots.LoadProcSnapshot("snap1");
  TestContext t(roots.env());
  CpuCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  testing::WriteFile(roots.proc() / "stat", "cpu 1 2\n");
  Status status = collector.Collect(kT0);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("/stat"), std::string_view::npos) << status.ToString();
}

TEST(CpuCollectorTest, MissingFileFailsInit) {
  ScratchRoots roots;
  TestContext t(roots.env());
  CpuCollector collector;
  EXPECT_EQ(collector.Init(t.ctx()).code(), StatusCode::kNotFound);
}

TEST(CpuCollectorTest, RealProcValuesInRange) {
  TestContext t{Env()};
  CpuCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  // Burn CPU so that ticks advance before the second sample.
  const int64_t until = MonoNowNs() + 150'000'000;
  volatile uint64_t sink = 0;
  while (MonoNowNs() < until) sink = sink + 1;
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  const double ratio = t.Last("titan_cpu_utilization_ratio{cpu=\"total\"}");
  EXPECT_GT(ratio, 0.0);
  EXPECT_LE(ratio, 1.0);
  EXPECT_GT(t.Counter("titan_cpu_busy_seconds_total{cpu=\"0\"}"), 0);
  EXPECT_GT(t.Counter("titan_context_switches_total"), 0);
  EXPECT_TRUE(t.invalid().empty());
}

}  // namespace
}  // namespace titan
