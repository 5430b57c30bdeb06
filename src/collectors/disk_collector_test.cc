#include "src/collectors/disk_collector.h"

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/collectors/collector_test_util.h"

namespace titan {
namespace {

using testing::kSecond;
using testing::kT0;
using testing::ScratchRoots;
using testing::TestContext;

std::string Line(std::string_view name, uint64_t sectors_read, uint64_t sectors_written,
                 uint64_t in_flight, uint64_t io_ms) {
  return "   8       0 " + std::string(name) + " 10 0 " + std::to_string(sectors_read) +
         " 5 20 0 " + std::to_string(sectors_written) + " 7 " + std::to_string(in_flight) + " " +
         std::to_string(io_ms) + " 12 0 0 0 0\n";
}

TEST(ParseDiskstatsTest, RecordedFile) {
  // The parsed names point into the text: keep it alive.
  const std::string text = testing::ReadFileOrDie(testing::FixturePath("proc/snap2/diskstats"));
  std::vector<DiskStats> stats;
  ASSERT_TRUE(ParseDiskstats(text, &stats).ok());
  ASSERT_EQ(stats.size(), 10u);
  const DiskStats& vda = stats[8];
  EXPECT_EQ(vda.name, "vda");
  EXPECT_EQ(vda.major, 254u);
  EXPECT_EQ(vda.reads, 37769u);
  EXPECT_EQ(vda.sectors_read, 4102226u);
  EXPECT_EQ(vda.writes, 27970u);
  EXPECT_EQ(vda.sectors_written, 3463224u);
  EXPECT_EQ(vda.io_ms, 11340u);
  EXPECT_EQ(vda.weighted_io_ms, 38198u);
}

TEST(ParseDiskstatsTest, KernelVariantsAndBadLines) {
  std::vector<DiskStats> stats;
  // 14 fields (Linux < 4.18), an old 7-field partition line (skipped), 20 fields (5.5+).
  ASSERT_TRUE(ParseDiskstats("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n"
                             "8 1 sda1 1 2 3 4\n"
                             "8 16 sdb 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n",
                             &stats)
                  .ok());
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[1].name, "sdb");
  EXPECT_EQ(stats[1].weighted_io_ms, 11u);
  EXPECT_EQ(ParseDiskstats("8 0 sda 1 2 3 4 5 6 7 8 9 10\n", &stats).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDiskstats("8 0 sda 1 2 3 4 5 6 7 8 9 10 1x\n", &stats).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDiskstats("8 99999999999 sda 1 2 3 4 5 6 7 8 9 10 11\n", &stats).code(),
            StatusCode::kInvalidArgument);
}

TEST(LooksLikePartitionTest, Names) {
  for (const char* name : {"sda1", "vdb2", "xvda1", "hdc3", "nvme0n1p1", "mmcblk0p1"}) {
    EXPECT_TRUE(LooksLikePartition(name)) << name;
  }
  for (const char* name : {"sda", "nvme0n1", "mmcblk0", "dm-0", "md0", "zram0", "vda", "123"}) {
    EXPECT_FALSE(LooksLikePartition(name)) << name;
  }
}

TEST(DiskCollectorTest, RecordedSnapshotsGiveExactNumbers) {
  ScratchRoots roots;
  roots.LoadProcSnapshot("snap1");
  testing::OverlayTree(testing::FixturePath("sys"), roots.sys());
  TestContext t(roots.env());
  DiskCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  roots.LoadProcSnapshot("snap2");
  ASSERT_TRUE(collector.Collect(kT0 + kSecond).ok());
  const std::string vda = "{device=\"vda\"}";
  EXPECT_DOUBLE_EQ(t.Counter("titan_disk_read_bytes_total" + vda), 4102226.0 * 512);
  EXPECT_DOUBLE_EQ(t.Counter("titan_disk_written_bytes_total" + vda), 3463224.0 * 512);
  EXPECT_DOUBLE_EQ(t.Counter("titan_disk_reads_completed_total" + vda), 37769);
  EXPECT_DOUBLE_EQ(t.Counter("titan_disk_writes_completed_total" + vda), 27970);
  EXPECT_DOUBLE_EQ(t.Counter("titan_disk_read_time_seconds_total" + vda), 26.401);
  EXPECT_DOUBLE_EQ(t.Counter("titan_disk_write_time_seconds_total" + vda), 10.803);
  EXPECT_DOUBLE_EQ(t.Counter("titan_disk_io_time_seconds_total" + vda), 11.340);
  // Over 1 s: +41192 sectors read, +40960 written, io_ticks +24 ms.
  EXPECT_DOUBLE_EQ(t.Last("titan_disk_read_bytes_per_second" + vda), 41192.0 * 512);
  EXPECT_DOUBLE_EQ(t.Last("titan_disk_written_bytes_per_second" + vda), 40960.0 * 512);
  EXPECT_DOUBLE_EQ(t.Last("titan_disk_busy_ratio" + vda), 0.024);
  EXPECT_DOUBLE_EQ(t.Last("titan_disk_io_in_progress" + vda), 0);
  // zram0 is a whole disk in /sys/block; loop devices are skipped.
  EXPECT_NE(t.registry().Find("titan_disk_busy_ratio{device=\"zram0\"}"), nullptr);
  EXPECT_EQ(t.registry().Find("titan_disk_busy_ratio{device=\"loop0\"}"), nullptr);
  EXPECT_TRUE(t.invalid().empty());
}

TEST(DiskCollectorTest, PartitionsSkippedBySysBlockOrByName) {
  for (bool with_sys : {true, false}) {
    ScratchRoots roots;
    if (with_sys) testing::WriteFile(roots.sys() / "block/sda/dev", "8:0\n");
    testing::WriteFile(
        roots.proc() / "diskstats",
        Line("sda", 0, 0, 0, 0) + Line("sda1", 0, 0, 0, 0) + Line("ram0", 0, 0, 0, 0));
    TestContext t(roots.env());
    DiskCollector collector;
    ASSERT_TRUE(collector.Init(t.ctx()).ok());
    ASSERT_TRUE(collector.Collect(kT0).ok());
    EXPECT_NE(t.registry().Find("titan_disk_read_bytes_total{device=\"sda\"}"), nullptr);
    EXPECT_EQ(t.registry().Find("titan_disk_read_bytes_total{device=\"sda1\"}"), nullptr);
    EXPECT_EQ(t.registry().Find("titan_disk_read_bytes_total{device=\"ram0\"}"), nullptr);
  }
}

TEST(DiskCollectorTest, AbsurdValuesAreDroppedAndReported) {
  ScratchRoots roots;
  testing::WriteFile(roots.proc() / "diskstats", Line("sdx", 1000, 1000, 1, 100));
  TestContext t(roots.env());
  DiskCollector collector(DiskCollectorOptions{.include_partitions = true});
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  // 100 ms later: io_ticks +105 ms is within one tick of the interval: clamped to 1.
  testing::WriteFile(roots.proc() / "diskstats", Line("sdx", 1000, 1000, 1, 205));
  ASSERT_TRUE(collector.Collect(kT0 + kSecond / 10).ok());
  EXPECT_DOUBLE_EQ(t.Last("titan_disk_busy_ratio{device=\"sdx\"}"), 1.0);
  // io_ticks +500 ms in 100 ms and 2^32-1 in flight (the kernel's underflow): dropped.
  testing::WriteFile(roots.proc() / "diskstats", Line("sdx", 1000, 1000, 4294967295, 705));
  ASSERT_TRUE(collector.Collect(kT0 + 2 * kSecond / 10).ok());
  EXPECT_EQ(t.invalid().size(), 2u);
  EXPECT_EQ(t.Samples("titan_disk_busy_ratio{device=\"sdx\"}"), 1u);
  EXPECT_DOUBLE_EQ(t.Last("titan_disk_io_in_progress{device=\"sdx\"}"), 1);
  // Counters going backwards: the device was re-created.
  testing::WriteFile(roots.proc() / "diskstats", Line("sdx", 10, 10, 0, 705));
  ASSERT_TRUE(collector.Collect(kT0 + 3 * kSecond / 10).ok());
  EXPECT_EQ(t.invalid().size(), 3u);
  EXPECT_DOUBLE_EQ(t.Counter("titan_disk_read_bytes_total{device=\"sdx\"}"), 1010.0 * 512);
}

TEST(DiskCollectorTest, RealProcValuesInRange) {
  TestContext t{Env()};
  DiskCollector collector(DiskCollectorOptions{.include_virtual = true});
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  SleepUntilMonoNs(MonoNowNs() + 50'000'000);
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  size_t disks = 0;
  for (Series* series : t.registry().AllSeries()) {
    if (series->desc().name != "titan_disk_busy_ratio" || series->LastTimeNs() == 0) continue;
    ++disks;
    const double busy = series->Window(series->LastTimeNs(), 1).last;
    EXPECT_GE(busy, 0) << series->Key();
    EXPECT_LE(busy, 1) << series->Key();
  }
  EXPECT_GT(disks, 0u) << "no block device in /proc/diskstats";
}

}  // namespace
}  // namespace titan
