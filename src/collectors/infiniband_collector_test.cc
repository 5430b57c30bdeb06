#include "src/collectors/infiniband_collector.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "src/base/clock.h"
#include "src/collectors/collector_test_util.h"

namespace titan {
namespace {

using testing::kSecond;
using testing::kT0;
using testing::ScratchRoots;
using testing::TestContext;

TEST(InfinibandParseTest, CounterStateRate) {
  uint64_t counter = 0;
  ASSERT_TRUE(ParseIbCounter("1250000000\n", &counter).ok());
  EXPECT_EQ(counter, 1250000000u);
  EXPECT_FALSE(ParseIbCounter("", &counter).ok());
  EXPECT_FALSE(ParseIbCounter("12 34\n", &counter).ok());
  EXPECT_FALSE(ParseIbCounter("-1\n", &counter).ok());
  int64_t state = 0;
  ASSERT_TRUE(ParseIbState("4: ACTIVE\n", &state).ok());
  EXPECT_EQ(state, 4);
  EXPECT_FALSE(ParseIbState("ACTIVE\n", &state).ok());
  EXPECT_FALSE(ParseIbState("-4: ACTIVE\n", &state).ok());
  double rate = 0;
  ASSERT_TRUE(ParseIbRate("200 Gb/sec (4X HDR)\n", &rate).ok());
  EXPECT_DOUBLE_EQ(rate, 25e9);
  ASSERT_TRUE(ParseIbRate("2.5 Gb/sec (1X SDR)\n", &rate).ok());
  EXPECT_DOUBLE_EQ(rate, 312.5e6);
  EXPECT_FALSE(ParseIbRate("200 GB/s\n", &rate).ok());
  EXPECT_FALSE(ParseIbRate("fast Gb/sec\n", &rate).ok());
}

TEST(InfinibandCollectorTest, FixtureTreeGivesExactNumbers) {
  ScratchRoots roots;
  testing::OverlayTree(testing::FixturePath("sys"), roots.sys());
  TestContext t(roots.env());
  InfinibandCollector collector;
  ASSERT_TRUE(collector.Init(t.ctx()).ok());
  EXPECT_EQ(collector.port_count(), 2u);
  ASSERT_TRUE(collector.Collect(kT0).ok());
  const std::string p0 = "{device=\"mlx5_0\",port=\"1\"}";
  const std::string p1 = "{device=\"mlx5_1\",port=\"1\"}";
  EXPECT_DOUBLE_EQ(t.Counter("titan_infiniband_receive_bytes_total" + p0), 1250000000.0 * 4);
  EXPECT_DOUBLE_EQ(t.Counter("titan_infiniband_transmit_bytes_total" + p0), 2500000000.0 * 4);
  EXPECT_DOUBLE_EQ(t.Counter("titan_infiniband_receive_errors_total" + p0), 3);
  EXPECT_DOUBLE_EQ(t.Counter("titan_infiniband_symbol_errors_total" + p0), 7);
  EXPECT_DOUBLE_EQ(t.Counter("titan_infiniband_link_downed_total" + p0), 1);
  EXPECT_DOUBLE_EQ(t.Counter("titan_infiniband_transmit_discards_total" + p0), 11);
  EXPECT_DOUBLE_EQ(t.Counter("titan_infiniband_transmit_wait_total" + p0), 123456);
  EXPECT_DOUBLE_EQ(t.Last("titan_infiniband_port_state" + p0), 4);
  EXPECT_DOUBLE_EQ(t.Last("titan_infiniband_link_rate_bytes_per_second" + p0), 25e9);
  EXPECT_DOUBLE_EQ(t.Last("titan_infiniband_port_state" + p1), 1);
  EXPECT_DOUBLE_EQ(t.Counter("titan_infiniband_link_downed_total" + p1), 2);
  // mlx5_1 has no port_xmit_wait: no series.
  EXPECT_EQ(t.registry().Find("titan_infiniband_transmit_wait_total" + p1), nullptr);

  // 2 s later: +5e9 words received (20 GB: 10 GB/s), +1e9 transmitted (2 GB/s).
  const auto counters = roots.sys() / "class/infiniband/mlx5_0/ports/1/counters";
  testing::WriteFile(counters / "port_rcv_data", "6250000000\n");
  testing::WriteFile(counters / "port_xmit_data", "3500000000\n");
  ASSERT_TRUE(collector.Collect(kT0 + 2 * kSecond).ok());
  EXPECT_DOUBLE_EQ(t.Last("titan_infiniband_receive_bytes_per_second" + p0), 10e9);
  EXPECT_DOUBLE_EQ(t.Last("titan_infiniband_transmit_bytes_per_second" + p0), 2e9);
  EXPECT_DOUBLE_EQ(t.Last("titan_infiniband_receive_bytes_per_second" + p1), 0);
  EXPECT_TRUE(t.invalid().empty());

  // A malformed counter fails Collect() naming the file, but the other port is still read.
  testing::WriteFile(counters / "symbol_error", "lots\n");
  testing::WriteFile(roots.sys() / "class/infiniband/mlx5_1/ports/1/counters/link_downed", "3\n");
  const Status status = collector.Collect(kT0 + 3 * kSecond);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("symbol_error"), std::string_view::npos) << status.ToString();
  EXPECT_DOUBLE_EQ(t.Counter("titan_infiniband_link_downed_total" + p1), 3);
}

TEST(InfinibandCollectorTest, NoInfinibandIsFailedPrecondition) {
  ScratchRoots roots;
  TestContext t(roots.env());
  InfinibandCollector collector;
  EXPECT_EQ(collector.Init(t.ctx()).code(), StatusCode::kFailedPrecondition);
  // A device without port counters is not enough either.
  testing::WriteFile(roots.sys() / "class/infiniband/mlx5_0/node_type", "1: CA\n");
  InfinibandCollector again;
  EXPECT_EQ(again.Init(t.ctx()).code(), StatusCode::kFailedPrecondition);
}

TEST(InfinibandCollectorTest, RealSys) {
  TestContext t{Env()};
  InfinibandCollector collector;
  const Status status = collector.Init(t.ctx());
  if (!std::filesystem::exists("/sys/class/infiniband")) {
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.ToString();
    return;
  }
  if (!status.ok())
    GTEST_SKIP() << "InfiniBand devices without port counters: " << status.ToString();
  ASSERT_TRUE(collector.Collect(WallNowNs()).ok());
  EXPECT_GT(collector.port_count(), 0u);
}

}  // namespace
}  // namespace titan
