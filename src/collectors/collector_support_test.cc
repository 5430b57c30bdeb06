// The counters every /proc and /sys collector exports through: a reading beyond the field's
// physical bound is never taken in, and one glitch costs at most two intervals.
#include "src/collectors/collector_support.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "src/base/clock.h"

namespace titan::collectors_internal {
namespace {

constexpr double kBound = 1000;  // per second
constexpr int64_t kInterval = kNsPerSecond;

// Feeds `readings` to a fresh counter at 1 s intervals; returns the steps, and the deltas and
// totals after each.
template <typename Counter>
struct Feed {
  std::vector<CounterStep> steps;
  std::vector<uint64_t> deltas;
  std::vector<double> totals;
  explicit Feed(std::initializer_list<uint64_t> readings) {
    Counter counter;
    for (uint64_t reading : readings) {
      uint64_t delta = 0;
      steps.push_back(counter.Advance(reading, kBound, kInterval, &delta));
      deltas.push_back(delta);
      totals.push_back(counter.total);
    }
  }
};

// Issue 15 #14: MonotonicCounter took a reading of 2^64-1 and then dropped every normal reading
// as a step back, exporting ~1.8e19 for good.
TEST(MonotonicCounterTest, AGlitchIsNotTakenAndTheCounterRecovers) {
  const Feed<MonotonicCounter> run({100, UINT64_MAX, 200, 300, 400});
  EXPECT_EQ(run.steps, (std::vector<CounterStep>{CounterStep::kFirst, CounterStep::kImplausible,
                                                 CounterStep::kRestarted, CounterStep::kDelta,
                                                 CounterStep::kDelta}));
  EXPECT_EQ(run.deltas, (std::vector<uint64_t>{0, 0, 0, 100, 100}));
  EXPECT_EQ(run.totals, (std::vector<double>{100, 100, 100, 200, 300}));
}

TEST(MonotonicCounterTest, AGlitchDownIsNotTakenEither) {
  const Feed<MonotonicCounter> run({5000, 0, 5200, 5300});
  EXPECT_EQ(run.steps, (std::vector<CounterStep>{CounterStep::kFirst, CounterStep::kRestarted,
                                                 CounterStep::kImplausible, CounterStep::kDelta}));
  EXPECT_EQ(run.totals, (std::vector<double>{5000, 5000, 5000, 5100}));
}

// iowait steps back on NO_HZ kernels: within the bound the previous reading stays the base.
TEST(MonotonicCounterTest, ASmallStepBackIsHeldUntilTheCounterPassesIt) {
  const Feed<MonotonicCounter> run({100, 90, 95, 130});
  EXPECT_EQ(run.steps, (std::vector<CounterStep>{CounterStep::kFirst, CounterStep::kHeld,
                                                 CounterStep::kHeld, CounterStep::kDelta}));
  EXPECT_EQ(run.deltas, (std::vector<uint64_t>{0, 0, 0, 30}));
  EXPECT_EQ(run.totals, (std::vector<double>{100, 100, 100, 130}));
}

TEST(MonotonicCounterTest, TheBoundIsPerSecondAndCoversAtLeastOneSecond) {
  MonotonicCounter counter;
  uint64_t delta = 0;
  counter.Advance(0, kBound, kInterval, &delta);
  EXPECT_EQ(counter.Advance(3000, kBound, 3 * kInterval, &delta), CounterStep::kDelta);
  EXPECT_EQ(counter.Advance(3500, kBound, kInterval / 100, &delta), CounterStep::kDelta)
      << "a late reading after a short interval";
  EXPECT_EQ(counter.Advance(4501, kBound, kInterval / 100, &delta), CounterStep::kImplausible);
}

TEST(ResettableCounterTest, ARestartCountsOnFromZero) {
  const Feed<ResettableCounter> run({5000, 10, 70});
  EXPECT_EQ(run.steps, (std::vector<CounterStep>{CounterStep::kFirst, CounterStep::kRestarted,
                                                 CounterStep::kDelta}));
  EXPECT_EQ(run.totals, (std::vector<double>{5000, 5010, 5070}));
}

}  // namespace
}  // namespace titan::collectors_internal
