#include "src/collectors/psi_collector.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "src/base/clock.h"
#include "src/collectors/collector_test_util.h"

namespace titan {
namespace {

using testing::kSecond;
using testing::kT0;
using testing::ScratchRoots;
using testing::TestContext;

TEST(ParsePressureTest, RecordedAndOldKernelFiles) {
  Pressure p;
  ASSERT_TRUE(
      ParsePressure(testing::ReadFileOrDie(testing::FixturePath("proc/snap2/pressure/io")), &p)
          .ok());
  ASSERT_TRUE(p.has_some && p.has_full);
  EXPECT_DOUBLE_EQ(p.some.avg10, 0.18);
  EXPECT_DOUBLE_EQ(p.some.avg60, 0.10);
  EXPECT_EQ(p.some.total_us, 5864186u);
  EXPECT_EQ(p.full.total_us, 5418036u);
  ASSERT_TRUE(
      ParsePressure(
          testing::ReadFileOrDie(testing::FixturePath("proc/psi_old_kernel/pressure/cpu")), &p)
          .ok());
  EXPECT_TRUE(p.has_some);
  EXPECT_FALSE(p.has_full);
  EXPECT_EQ(p.some.total_us, 9876543u);
}

TEST(ParsePressureTest, BadInput) {
  Pressure p;
  EXPECT_EQ(ParsePressure("", &p).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePressure("some avg10=0.00 avg60=0.00\n", &p).code(),
            StatusCode::kInvalidArgument);  // truncated: no total=
  EXPECT_EQ(ParsePressure("some avg10=x total=5\n", &p).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePressure("some total=-5\n", &p).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(ParsePressure("some avg10=1.00 avg60=0 avg300=0 avg1200=9 total=5\n", &p).ok());
  EXPECT_EQ(p.some.total_us, 5u);
}

TEST(PsiCollectorTest, RecordedSnapshotsGiveExactNumbers) {
  ScratchRoots roots;
  roots.LoadProcSnapshot("snap1");
  TestContext t(roots.env());
  PsiCollector collector;  // triggers on, but fixtures are not procfs: sampled only
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  EXPECT_EQ(collector.active_triggers(), 0);
  ASSERT_TRUE(collector.Collect(kT0).ok());
  roots.LoadProcSnapshot("snap2");
  ASSERT_TRUE(collector.Collect(kT0 + kSecond).ok());
  EXPECT_DOUBLE_EQ(t.Counter("titan_pressure_stall_seconds_total{resource=\"cpu\",kind=\"some\"}"),
                   12.005747);
  EXPECT_DOUBLE_EQ(t.Counter("titan_pressure_stall_seconds_total{resource=\"io\",kind=\"full\"}"),
                   5.418036);
  // Over 1 s: cpu some +6195 us, io some +28792 us, io full +28154 us.
  EXPECT_DOUBLE_EQ(t.Last("titan_pressure_stall_ratio{resource=\"cpu\",kind=\"some\"}"), 0.006195);
  EXPECT_DOUBLE_EQ(t.Last("titan_pressure_stall_ratio{resource=\"io\",kind=\"some\"}"), 0.028792);
  EXPECT_DOUBLE_EQ(t.Last("titan_pressure_stall_ratio{resource=\"io\",kind=\"full\"}"), 0.028154);
  EXPECT_DOUBLE_EQ(t.Last("titan_pressure_stall_ratio{resource=\"memory\",kind=\"some\"}"), 0);
  EXPECT_DOUBLE_EQ(t.Last("titan_pressure_avg10_ratio{resource=\"cpu\",kind=\"some\"}"), 0.0024);
  EXPECT_DOUBLE_EQ(t.Last("titan_pressure_trigger_active{resource=\"cpu\"}"), 0);
  EXPECT_DOUBLE_EQ(t.Counter("titan_pressure_stall_events_total{resource=\"memory\"}"), 0);
  EXPECT_TRUE(t.invalid().empty());
}

TEST(PsiCollectorTest, OldKernelWithoutCpuFullAndAbsurdValues) {
  ScratchRoots roots;
  roots.LoadProcSnapshot("psi_old_kernel");
  TestContext t(roots.env());
  PsiCollector collector(PsiCollectorOptions{.triggers = false});
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  EXPECT_EQ(t.registry().Find("titan_pressure_stall_seconds_total{resource=\"cpu\",kind=\"full\"}"),
            nullptr);
  EXPECT_DOUBLE_EQ(t.Last("titan_pressure_avg10_ratio{resource=\"cpu\",kind=\"some\"}"), 0.125);
  // 2 s of stall in 1 s, and avg10 of 250 %: both dropped and reported.
  testing::WriteFile(roots.proc() / "pressure/cpu",
                     "some avg10=250.00 avg60=3.00 avg300=1.25 total=11876543\n");
  ASSERT_TRUE(collector.Collect(kT0 + kSecond).ok());
  EXPECT_EQ(t.invalid().size(), 2u);
  EXPECT_EQ(t.Samples("titan_pressure_stall_ratio{resource=\"cpu\",kind=\"some\"}"), 0u);
  EXPECT_DOUBLE_EQ(t.Last("titan_pressure_avg10_ratio{resource=\"cpu\",kind=\"some\"}"), 0.125);
  // The total went backwards: dropped, counter kept.
  testing::WriteFile(roots.proc() / "pressure/cpu", "some avg10=1 avg60=1 avg300=1 total=5\n");
  ASSERT_TRUE(collector.Collect(kT0 + 2 * kSecond).ok());
  EXPECT_EQ(t.invalid().size(), 3u);
  EXPECT_DOUBLE_EQ(t.Counter("titan_pressure_stall_seconds_total{resource=\"cpu\",kind=\"some\"}"),
                   11.876543);
}

TEST(PsiCollectorTest, NoPressureFilesIsFailedPrecondition) {
  ScratchRoots roots;
  TestContext t(roots.env());
  PsiCollector collector;
  const Status status = collector.Init(t.ctx());
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("CONFIG_PSI"), std::string_view::npos) << status.ToString();
}

bool HavePsi() { return Env::ReadFile("/proc/pressure/cpu").ok(); }

TEST(PsiCollectorTest, RealProcValuesInRange) {
  if (!HavePsi()) GTEST_SKIP() << "this kernel has no /proc/pressure (CONFIG_PSI off or psi=0)";
  TestContext t{Env()};
  PsiCollector collector(PsiCollectorOptions{.triggers = false});
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  SleepUntilMonoNs(MonoNowNs() + 50'000'000);
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  for (const char* resource : {"cpu", "memory", "io"}) {
    const double ratio = t.Last(std::string("titan_pressure_stall_ratio{resource=\"") + resource +
                                "\",kind=\"some\"}");
    EXPECT_GE(ratio, 0) << resource;
    EXPECT_LE(ratio, 1) << resource;
  }
}

// Real kernel triggers: CPU pressure from more spinning threads than CPUs must fire a
// "some 50 ms per 500 ms" trigger on cpu.
TEST(PsiCollectorTest, RealTriggerFiresUnderCpuContention) {
  if (!HavePsi()) GTEST_SKIP() << "this kernel has no /proc/pressure (CONFIG_PSI off or psi=0)";
  TestContext t{Env()};
  PsiCollector collector(PsiCollectorOptions{
      .trigger_kind = "some", .trigger_threshold_us = 50'000, .trigger_window_us = 500'000});
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  if (collector.active_triggers() == 0) {
    GTEST_SKIP() << "the kernel refused PSI triggers here (needs CAP_SYS_RESOURCE before 6.5, a "
                    "writable /proc/pressure); see the collector's warning above";
  }
  const int64_t start_ns = WallNowNs();
  std::atomic<bool> stop{false};
  std::vector<std::thread> spinners;
  const unsigned threads = 2 * std::max(1u, std::thread::hardware_concurrency()) + 2;
  for (unsigned i = 0; i < threads; ++i) {
    spinners.emplace_back([&stop] {
      volatile uint64_t sink = 0;
      while (!stop.load(std::memory_order_relaxed)) sink = sink + 1;
    });
  }
  const int64_t give_up_ns = MonoNowNs() + 10 * kSecond;
  while (collector.RecentStallEvents(start_ns).empty() && MonoNowNs() < give_up_ns) {
    SleepUntilMonoNs(MonoNowNs() + 20'000'000);
  }
  stop = true;
  for (auto& spinner : spinners) spinner.join();
  const std::vector<StallEvent> events = collector.RecentStallEvents(start_ns);
  ASSERT_FALSE(events.empty()) << "no PSI trigger within 10 s of " << threads
                               << " spinning threads";
  EXPECT_EQ(events.front().resource, "cpu");
  EXPECT_GE(events.front().time_ns, start_ns);
  EXPECT_GE(t.Counter("titan_pressure_stall_events_total{resource=\"cpu\"}"), 1);
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  EXPECT_DOUBLE_EQ(t.Last("titan_pressure_trigger_active{resource=\"cpu\"}"), 1);
}

}  // namespace
}  // namespace titan
