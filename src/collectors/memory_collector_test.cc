#include "src/collectors/memory_collector.h"

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

TEST(ParseMeminfoTest, RecordedFile) {
  Meminfo m;
  ASSERT_TRUE(
      ParseMeminfo(testing::ReadFileOrDie(testing::FixturePath("proc/snap2/meminfo")), &m).ok());
  EXPECT_EQ(m.Get(Meminfo::kMemTotal), 24684096ull * 1024);
  EXPECT_EQ(m.Get(Meminfo::kMemAvailable), 24291000ull * 1024);
  EXPECT_EQ(m.Get(Meminfo::kDirty), 440ull * 1024);
  EXPECT_TRUE(m.Has(Meminfo::kSwapFree));
}

TEST(ParseMeminfoTest, OldKernelWithoutMemAvailableIsEstimated) {
  Meminfo m;
  ASSERT_TRUE(ParseMeminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 20 kB\nCached: 30 kB\n"
                           "HugePages_Total: 0\n",
                           &m)
                  .ok());
  EXPECT_EQ(m.Get(Meminfo::kMemAvailable), 150u * 1024);
}

TEST(ParseMeminfoTest, RejectsBadInput) {
  Meminfo m;
  EXPECT_EQ(ParseMeminfo("MemFree: 100 kB\n", &m).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseMeminfo("MemTotal: 10x kB\n", &m).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseMeminfo("MemTotal: 99999999999999999999 kB\n", &m).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseMeminfo("MemTotal: 18014398509481984 kB\n", &m).code(),  // 2^54 KiB overflows
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseMeminfo("MemTotal: 10 MB\n", &m).code(), StatusCode::kInvalidArgument);
}

TEST(ParseVmstatTest, RecordedFileAndBadInput) {
  Vmstat v;
  ASSERT_TRUE(
      ParseVmstat(testing::ReadFileOrDie(testing::FixturePath("proc/snap1/vmstat")), &v).ok());
  EXPECT_EQ(v.value[Vmstat::kPgfault], 6031118u);
  EXPECT_EQ(v.value[Vmstat::kPgmajfault], 1586u);
  EXPECT_EQ(v.value[Vmstat::kPgpgin], 2030517u);
  EXPECT_TRUE(v.Has(Vmstat::kOomKill));
  EXPECT_EQ(ParseVmstat("pgfault -1\n", &v).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseVmstat("nr_free_pages 1\n", &v).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(ParseVmstat("pgfault 5\nnew_counter_of_2030 7\n", &v).ok());
  EXPECT_FALSE(v.Has(Vmstat::kOomKill));
}

TEST(MemoryCollectorTest, RecordedSnapshotsGiveExactNumbers) {
  ScratchRoots roots;
  roots.LoadProcSnapshot("snap1");
  TestContext t(roots.env());
  MemoryCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  EXPECT_DOUBLE_EQ(t.Last("titan_memory_used_bytes"), (24684096.0 - 24288976.0) * 1024);
  roots.LoadProcSnapshot("snap2");
  ASSERT_TRUE(collector.Collect(kT0 + kSecond).ok());
  EXPECT_DOUBLE_EQ(t.Last("titan_memory_used_bytes"), (24684096.0 - 24291000.0) * 1024);
  EXPECT_DOUBLE_EQ(t.Last("titan_memory_available_bytes"), 24291000.0 * 1024);
  EXPECT_DOUBLE_EQ(t.Last("titan_memory_total_bytes"), 24684096.0 * 1024);
  EXPECT_DOUBLE_EQ(t.Last("titan_memory_dirty_bytes"), 440.0 * 1024);
  EXPECT_DOUBLE_EQ(t.Last("titan_memory_writeback_bytes"), 0);
  EXPECT_DOUBLE_EQ(t.Last("titan_memory_swap_used_bytes"), 0);
  EXPECT_DOUBLE_EQ(t.Counter("titan_memory_page_faults_total"), 6033938);
  EXPECT_DOUBLE_EQ(t.Counter("titan_memory_major_page_faults_total"), 1587);
  EXPECT_DOUBLE_EQ(t.Counter("titan_memory_paged_in_bytes_total"), 2051113.0 * 1024);
  EXPECT_DOUBLE_EQ(t.Counter("titan_memory_paged_out_bytes_total"), 1731612.0 * 1024);
  EXPECT_DOUBLE_EQ(t.Counter("titan_memory_swapped_in_bytes_total"), 0);
  EXPECT_DOUBLE_EQ(t.Counter("titan_memory_oom_kills_total"), 0);
  EXPECT_TRUE(t.invalid().empty());
}

TEST(MemoryCollectorTest, AbsurdValuesAreDroppedAndReported) {
  ScratchRoots roots;
  testing::WriteFile(roots.proc() / "meminfo", "MemTotal: 1000 kB\nMemAvailable: 400 kB\n");
  testing::WriteFile(roots.proc() / "vmstat", "pgfault 100\npswpin 3\n");
  TestContext t(roots.env());
  MemoryCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  EXPECT_DOUBLE_EQ(t.Counter("titan_memory_swapped_in_bytes_total"), 3.0 * sysconf(_SC_PAGESIZE));
  testing::WriteFile(roots.proc() / "meminfo", "MemTotal: 1000 kB\nMemAvailable: 4000 kB\n");
  testing::WriteFile(roots.proc() / "vmstat", "pgfault 90\npswpin 3\n");
  ASSERT_TRUE(collector.Collect(kT0 + kSecond).ok());
  EXPECT_EQ(t.invalid().size(), 2u);
  EXPECT_DOUBLE_EQ(t.Last("titan_memory_used_bytes"), 600.0 * 1024);  // kept from the good sample
  EXPECT_EQ(t.Samples("titan_memory_used_bytes"), 1u);
  EXPECT_DOUBLE_EQ(t.Counter("titan_memory_page_faults_total"), 100);
  // A truncated file is an error naming it.
  testing::WriteFile(roots.proc() / "meminfo", "MemTot");
  Status status = collector.Collect(kT0 + 2 * kSecond);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("meminfo"), std::string_view::npos);
}

// Issue 15 #14: a vmstat counter read once as 2^64-1 was exported and then stuck there.
TEST(MemoryCollectorTest, AVmstatGlitchIsNotExportedAndTheCounterRecovers) {
  ScratchRoots roots;
  testing::WriteFile(roots.proc() / "meminfo", "MemTotal: 1000 kB\nMemAvailable: 400 kB\n");
  TestContext t(roots.env());
  MemoryCollector collector;
  const std::string faults = "titan_memory_page_faults_total";
  const uint64_t readings[] = {100, UINT64_MAX, 200, 300};
  const double exported[] = {100, 100, 100, 200};
  testing::WriteFile(roots.proc() / "vmstat", "pgfault 100\n");
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  for (int i = 0; i < 4; ++i) {
    testing::WriteFile(roots.proc() / "vmstat", "pgfault " + std::to_string(readings[i]) + "\n");
    ASSERT_TRUE(collector.Collect(kT0 + i * kSecond).ok());
    EXPECT_DOUBLE_EQ(t.Counter(faults), exported[i]) << "reading " << i;
  }
  EXPECT_DOUBLE_EQ(
      t.Counter("titan_collector_readings_dropped_total{collector=\"memory\",reason=\"counter_"
                "jump\"}"),
      1);
  ASSERT_EQ(t.invalid().size(), 2u);
  EXPECT_NE(t.invalid()[0].find("pgfault"), std::string::npos) << t.invalid()[0];
}

TEST(MemoryCollectorTest, RealProcValuesInRange) {
  TestContext t{Env()};
  MemoryCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  const double total = t.Last("titan_memory_total_bytes");
  const double used = t.Last("titan_memory_used_bytes");
  EXPECT_GT(used, 0);
  EXPECT_LT(used, total);
  EXPECT_GT(t.Counter("titan_memory_page_faults_total"), 0);
  EXPECT_TRUE(t.invalid().empty());
}

}  // namespace
}  // namespace titan
