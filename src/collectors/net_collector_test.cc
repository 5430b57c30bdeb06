#include "src/collectors/net_collector.h"

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/collectors/collector_test_util.h"

namespace titan {
namespace {

using testing::kSecond;
using testing::kT0;
using testing::ScratchRoots;
using testing::TestContext;

constexpr char kHeader[] =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
    "drop fifo colls carrier compressed\n";

std::string NetDev(uint64_t eth_rx_bytes, uint64_t eth_tx_bytes) {
  return std::string(kHeader) +
         "    lo:    3267      29    0    0    0     0          0         0     3267      29    0 "
         "   0    0     0       0          0\n" +
         "  eth0: " + std::to_string(eth_rx_bytes) + " 1982 1 2 0 0 0 0 " +
         std::to_string(eth_tx_bytes) + " 1043 3 4 0 0 0 0\n";
}

TEST(ParseNetDevTest, RecordedFile) {
  // The parsed names point into the text: keep it alive.
  const std::string text = testing::ReadFileOrDie(testing::FixturePath("proc/snap1/net/dev"));
  std::vector<NetDevStats> stats;
  ASSERT_TRUE(ParseNetDev(text, &stats).ok());
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_EQ(stats[0].name, "lo");
  EXPECT_EQ(stats[3].name, "eth0");
  EXPECT_EQ(stats[3].value[NetDevStats::kRxBytes], 104589731u);
  EXPECT_EQ(stats[3].value[NetDevStats::kRxPackets], 1982u);
  EXPECT_EQ(stats[3].value[NetDevStats::kTxBytes], 81120u);
  EXPECT_EQ(stats[3].value[NetDevStats::kTxPackets], 1043u);
}

TEST(ParseNetDevTest, OldFormatExtraColumnsAndBadLines) {
  std::vector<NetDevStats> stats;
  // Kernels before 2.6.x printed "eth0:123" without a space; newer ones may add columns.
  ASSERT_TRUE(ParseNetDev("eth0:1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n", &stats).ok());
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].value[NetDevStats::kRxBytes], 1u);
  EXPECT_EQ(stats[0].value[NetDevStats::kTxDrops], 12u);
  EXPECT_EQ(ParseNetDev("eth0: 1 2 3\n", &stats).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseNetDev("eth0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", &stats).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseNetDev(": 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", &stats).code(),
            StatusCode::kInvalidArgument);
}

TEST(NetCollectorTest, CountersAndThroughput) {
  ScratchRoots roots;
  roots.LoadProcSnapshot("snap1");
  TestContext t(roots.env());
  NetCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  EXPECT_DOUBLE_EQ(t.Counter("titan_network_receive_bytes_total{device=\"eth0\"}"), 104589731);
  EXPECT_EQ(t.registry().Find("titan_network_receive_bytes_total{device=\"lo\"}"), nullptr);
  testing::WriteFile(roots.proc() / "net/dev", NetDev(104589731 + 5'000'000, 81120 + 250'000));
  ASSERT_TRUE(collector.Collect(kT0 + kSecond / 2).ok());
  EXPECT_DOUBLE_EQ(t.Last("titan_network_receive_bytes_per_second{device=\"eth0\"}"), 10'000'000);
  EXPECT_DOUBLE_EQ(t.Last("titan_network_transmit_bytes_per_second{device=\"eth0\"}"), 500'000);
  EXPECT_DOUBLE_EQ(t.Counter("titan_network_receive_errors_total{device=\"eth0\"}"), 1);
  EXPECT_DOUBLE_EQ(t.Counter("titan_network_receive_drops_total{device=\"eth0\"}"), 2);
  EXPECT_DOUBLE_EQ(t.Counter("titan_network_transmit_errors_total{device=\"eth0\"}"), 3);
  EXPECT_DOUBLE_EQ(t.Counter("titan_network_transmit_drops_total{device=\"eth0\"}"), 4);
  EXPECT_DOUBLE_EQ(t.Counter("titan_network_transmit_packets_total{device=\"eth0\"}"), 1043);
  EXPECT_DOUBLE_EQ(t.Counter("titan_network_receive_bytes_total{device=\"ifb0\"}"), 0);
  EXPECT_TRUE(t.invalid().empty());
}

// A net collector on a scratch /proc whose eth0 first reads 1000 bytes each way at kT0.
class NetCollectorOnEth0 : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFile(roots.proc() / "net/dev", NetDev(1000, 1000));
    ASSERT_TRUE(collector.Init(t.ctx()).ok());
    ASSERT_TRUE(collector.Collect(kT0).ok());
  }
  // Rewrites /proc/net/dev with eth0's byte counters and collects at kT0 + `seconds`.
  void CollectAt(int seconds, uint64_t rx_bytes, uint64_t tx_bytes) {
    testing::WriteFile(roots.proc() / "net/dev", NetDev(rx_bytes, tx_bytes));
    ASSERT_TRUE(collector.Collect(kT0 + seconds * kSecond).ok());
  }

  ScratchRoots roots;
  TestContext t{roots.env()};
  NetCollector collector;
};

TEST_F(NetCollectorOnEth0, RecreatedInterfaceCountsOnAndSkipsOneRate) {
  CollectAt(1, 100, 100);  // eth0 was re-created
  EXPECT_EQ(t.invalid().size(), 1u);
  EXPECT_EQ(t.Samples("titan_network_receive_bytes_per_second{device=\"eth0\"}"), 0u);
  EXPECT_DOUBLE_EQ(t.Counter("titan_network_receive_bytes_total{device=\"eth0\"}"), 1100);
  CollectAt(2, 300, 100);
  EXPECT_DOUBLE_EQ(t.Last("titan_network_receive_bytes_per_second{device=\"eth0\"}"), 200);
  EXPECT_DOUBLE_EQ(t.Counter("titan_network_receive_bytes_total{device=\"eth0\"}"), 1300);
}

// Issue 15 #14: a /proc/net/dev counter read as 2^64-1 was exported as 1.85e20 B/s.
TEST_F(NetCollectorOnEth0, ACounterJumpBeyondThePhysicalBoundDropsTheIntervalAndIsCounted) {
  const std::string rate = "titan_network_receive_bytes_per_second{device=\"eth0\"}";
  const std::string total = "titan_network_receive_bytes_total{device=\"eth0\"}";
  CollectAt(1, UINT64_MAX, 1100);
  EXPECT_EQ(t.Samples(rate), 0u);
  EXPECT_EQ(t.Samples("titan_network_transmit_bytes_per_second{device=\"eth0\"}"), 0u);
  EXPECT_DOUBLE_EQ(t.Counter(total), 1000);  // the glitch is not in the total either
  EXPECT_DOUBLE_EQ(
      t.Counter(
          "titan_collector_readings_dropped_total{collector=\"net\",reason=\"counter_jump\"}"),
      1);
  ASSERT_EQ(t.invalid().size(), 1u);
  EXPECT_NE(t.invalid()[0].find("eth0"), std::string::npos) << t.invalid()[0];

  // Back to normal: a reading below the glitch is a restart (one more dropped interval, counted),
  // then rates resume; nothing implausible was ever exported.
  CollectAt(2, 3000, 1200);
  CollectAt(3, 4000, 1300);
  EXPECT_DOUBLE_EQ(t.Last(rate), 1000);
  EXPECT_EQ(t.Samples(rate), 1u);
  EXPECT_DOUBLE_EQ(
      t.Counter(
          "titan_collector_readings_dropped_total{collector=\"net\",reason=\"counter_reset\"}"),
      1);
  EXPECT_LT(t.Counter(total), 1e6);

  // The largest plausible increase (1.6 Tbit/s for a second) is data, not a glitch.
  CollectAt(4, 4000 + 200'000'000'000, 1400);
  EXPECT_DOUBLE_EQ(t.Last(rate), 200'000'000'000);
}

TEST(NetCollectorTest, LoopbackOnRequest) {
  ScratchRoots roots;
  roots.LoadProcSnapshot("snap1");
  TestContext t(roots.env());
  NetCollector collector(NetCollectorOptions{.include_loopback = true});
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(kT0).ok());
  EXPECT_DOUBLE_EQ(t.Counter("titan_network_transmit_bytes_total{device=\"lo\"}"), 3267);
}

TEST(NetCollectorTest, RealProcValuesInRange) {
  TestContext t{Env()};
  NetCollector collector(NetCollectorOptions{.include_loopback = true});
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  const double rate = t.Last("titan_network_receive_bytes_per_second{device=\"lo\"}");
  EXPECT_GE(rate, 0);
  EXPECT_LT(rate, 1e12);
  EXPECT_GE(t.Counter("titan_network_receive_bytes_total{device=\"lo\"}"), 0);
}

}  // namespace
}  // namespace titan
