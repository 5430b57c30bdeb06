#include "src/collectors/process_collector.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
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

TEST(ParseProcessStatTest, CommWithSpacesAndParentheses) {
  ProcessStat stat;
  ASSERT_TRUE(
      ParseProcessStat(testing::ReadFileOrDie(testing::FixturePath("proc/snap1/4242/stat")), &stat)
          .ok());
  EXPECT_EQ(stat.pid, 4242);
  EXPECT_EQ(stat.state, 'R');
  EXPECT_EQ(stat.major_faults, 17u);
  EXPECT_EQ(stat.utime_ticks, 1500u);
  EXPECT_EQ(stat.stime_ticks, 250u);
  EXPECT_EQ(stat.threads, 12u);
  EXPECT_EQ(stat.start_ticks, 987654u);
  EXPECT_EQ(stat.rss_pages, 262144u);
  ASSERT_TRUE(
      ParseProcessStat(testing::ReadFileOrDie(testing::FixturePath("proc/snap1/10165/stat")), &stat)
          .ok());
  EXPECT_EQ(stat.state, 'S');
  EXPECT_EQ(stat.rss_pages, 428u);
}

TEST(ParseProcessStatTest, BadInput) {
  ProcessStat stat;
  EXPECT_FALSE(ParseProcessStat("", &stat).ok());
  EXPECT_FALSE(ParseProcessStat("12 (x) R 1 2 3", &stat).ok());  // truncated
  EXPECT_FALSE(ParseProcessStat("12 x) R 1 2 3", &stat).ok());   // no '('
  EXPECT_FALSE(ParseProcessStat(")12 (x R 1 2 3", &stat).ok());  // ')' before '('
  EXPECT_FALSE(ParseProcessStat("12 (x) R 1 1 1 0 -1 4 5 0 x 0 1 2 0 0 20 0 1 0 9 9 9", &stat)
                   .ok());  // majflt not a number
}

TEST(ParseProcessStatusAndIoTest, Fields) {
  uint64_t rss = 0;
  ASSERT_TRUE(ParseProcessStatusRss("Name:\tx\nVmRSS:\t   1824 kB\n", &rss).ok());
  EXPECT_EQ(rss, 1824u * 1024);
  EXPECT_EQ(ParseProcessStatusRss("Name:\tkworker\n", &rss).code(), StatusCode::kNotFound);
  EXPECT_EQ(ParseProcessStatusRss("VmRSS:\t12\n", &rss).code(), StatusCode::kInvalidArgument);
  ProcessIo io;
  ASSERT_TRUE(
      ParseProcessIo(testing::ReadFileOrDie(testing::FixturePath("proc/snap1/10165/io")), &io)
          .ok());
  EXPECT_EQ(io.read_bytes, 40960u);
  EXPECT_EQ(io.write_bytes, 0u);
  EXPECT_FALSE(ParseProcessIo("rchar: 5\n", &io).ok());
  EXPECT_FALSE(ParseProcessIo("read_bytes: x\nwrite_bytes: 1\n", &io).ok());
}

TEST(ProcessCollectorTest, FixtureSnapshotsGiveExactNumbers) {
  ScratchRoots roots;
  roots.LoadProcSnapshot("snap1");
  TestContext t(roots.env());
  t.processes().Watch(4242, 0);
  t.processes().Watch(10165, 1);
  t.processes().Watch(999999, 2);  // never existed: skipped quietly
  ProcessCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  roots.LoadProcSnapshot("snap2");
  ASSERT_TRUE(collector.Collect(kT0 + kSecond).ok());
  EXPECT_EQ(collector.alive(), 2u);
  const std::string r0 = "{rank=\"0\",pid=\"4242\"}";
  // utime+stime 1750 -> 1900 ticks.
  EXPECT_DOUBLE_EQ(t.Counter("titan_process_cpu_seconds_total" + r0), 1900 / Ticks());
  EXPECT_DOUBLE_EQ(t.Last("titan_process_cpu_cores" + r0), 150 / Ticks());
  EXPECT_DOUBLE_EQ(t.Last("titan_process_resident_memory_bytes" + r0), 1064960.0 * 1024);
  EXPECT_DOUBLE_EQ(t.Last("titan_process_threads" + r0), 12);
  EXPECT_DOUBLE_EQ(t.Counter("titan_process_read_bytes_total" + r0), 413696);
  EXPECT_DOUBLE_EQ(t.Counter("titan_process_written_bytes_total" + r0), 2097152);
  EXPECT_DOUBLE_EQ(t.Counter("titan_process_major_page_faults_total" + r0), 19);
  const std::string r1 = "{rank=\"1\",pid=\"10165\"}";
  EXPECT_DOUBLE_EQ(t.Last("titan_process_resident_memory_bytes" + r1), 1824.0 * 1024);
  EXPECT_DOUBLE_EQ(t.Counter("titan_process_read_bytes_total" + r1), 40960);
  EXPECT_EQ(t.registry().Find("titan_process_cpu_seconds_total{rank=\"2\",pid=\"999999\"}"),
            nullptr);
  EXPECT_TRUE(t.invalid().empty());

  // The process exits (a zombie until reaped; the real-process test covers a vanished pid):
  // skipped quietly, never an error.
  testing::WriteFile(roots.proc() / "4242/stat",
                     "4242 (python3 (rank 0)) Z 4200 4200 4100 0 -1 4227084 51300 0 19 0 1640 260 "
                     "0 0 20 0 1 0 987654 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1\n");
  ASSERT_TRUE(collector.Collect(kT0 + 2 * kSecond).ok());
  EXPECT_EQ(collector.alive(), 1u);
  EXPECT_TRUE(t.invalid().empty());
}

// Snapshot "snap2" with pid 4242 watched as rank 0, and a collector initialised on it.
class ProcessCollectorSnapshotTest : public ::testing::Test {
 protected:
  ProcessCollectorSnapshotTest() : t_(roots_.env()) {
    roots_.LoadProcSnapshot("snap2");
    t_.processes().Watch(4242, 0);
  }
  void SetUp() override { ASSERT_TRUE(collector_.Init(t_.ctx()).ok()); }
  // Rewrites pid 4242's stat: one thread, `utime` and `stime` ticks, started at tick 2000000.
  void WriteStat(int utime, int stime) {
    testing::WriteFile(roots_.proc() / "4242/stat",
                       fmt::format("4242 (other) S 1 1 1 0 -1 0 0 0 0 0 {} {} 0 0 20 0 1 0 "
                                   "2000000 1 100 0\n",
                                   utime, stime));
  }

  ScratchRoots roots_;
  TestContext t_;
  ProcessCollector collector_;
};

TEST_F(ProcessCollectorSnapshotTest, ReusedPidStartsAfresh) {
  ASSERT_TRUE(collector_.Collect(kT0).ok());
  // Same pid, another start time and less CPU time: a new process, not a counter going back.
  WriteStat(10, 5);
  ASSERT_TRUE(collector_.Collect(kT0 + kSecond).ok());
  EXPECT_TRUE(t_.invalid().empty());
  EXPECT_DOUBLE_EQ(t_.Counter("titan_process_cpu_seconds_total{rank=\"0\",pid=\"4242\"}"),
                   (1900 + 15) / Ticks());  // the exported total keeps growing
}

TEST_F(ProcessCollectorSnapshotTest, UserAndSystemTimeEachRoundedToATickAreNotAGlitch) {
  // /proc/<pid>/stat truncates utime and stime to ticks separately, so two readings a moment
  // apart can differ by two ticks when both cross a tick (seen under TSan: CI flagged the test
  // process' own CPU use as "above its thread count"). A third tick in that moment is a glitch.
  constexpr int64_t kMs = 1'000'000;
  WriteStat(10, 5);
  ASSERT_TRUE(collector_.Collect(kT0).ok());
  WriteStat(11, 6);  // two ticks in 1 ms on one thread: each field crossed one
  ASSERT_TRUE(collector_.Collect(kT0 + kMs).ok());
  EXPECT_TRUE(t_.invalid().empty()) << t_.invalid()[0];
  EXPECT_DOUBLE_EQ(t_.Last("titan_process_cpu_cores{rank=\"0\",pid=\"4242\"}"), 2 / Ticks() * 1e3);
  WriteStat(13, 7);  // three more in the next 1 ms
  ASSERT_TRUE(collector_.Collect(kT0 + 2 * kMs).ok());
  EXPECT_EQ(t_.invalid().size(), 1u);
}

TEST(ProcessCollectorTest, RealChildProcessAndItsExit) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile uint64_t sink = 0;
    for (;;) sink = sink + 1;  // spin until killed
  }
  TestContext t{Env()};
  t.processes().Watch(child, 3);
  t.processes().Watch(getpid(), 4);
  ProcessCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  const std::string labels = "{rank=\"3\",pid=\"" + std::to_string(child) + "\"}";
  // Sample until the spinning child has been charged a CPU tick (at most 10 s on a loaded host).
  const int64_t give_up_ns = MonoNowNs() + 10'000'000'000;
  do {
    SleepUntilMonoNs(MonoNowNs() + 100'000'000);
    ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  } while (t.Counter("titan_process_cpu_seconds_total" + labels) == 0 && MonoNowNs() < give_up_ns);
  EXPECT_GT(t.Counter("titan_process_cpu_seconds_total" + labels), 0);
  const double cores = t.Last("titan_process_cpu_cores" + labels);
  EXPECT_GE(cores, 0);
  EXPECT_LE(cores, 1.5);
  EXPECT_GT(t.Last("titan_process_resident_memory_bytes" + labels), 0);
  const std::string self = "{rank=\"4\",pid=\"" + std::to_string(getpid()) + "\"}";
  EXPECT_GT(t.Last("titan_process_resident_memory_bytes" + self), 1 << 20);
  EXPECT_GE(t.Counter("titan_process_cpu_seconds_total" + self), 0);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  EXPECT_EQ(collector.alive(), 1u);
  EXPECT_TRUE(t.invalid().empty());
}

TEST(ProcessCollectorTest, NeedsTheWatchedProcessList) {
  TestContext t{Env()};
  CollectorContext ctx = t.ctx();
  ctx.processes = nullptr;
  ProcessCollector collector;
  EXPECT_EQ(collector.Init(ctx).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace titan
