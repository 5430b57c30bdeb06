#include "src/sim/formulas.h"

#include <cmath>

#include <gtest/gtest.h>

namespace titan::sim {
namespace {

constexpr double kMinute = 60;
constexpr double kHour = 3600;

// Source: J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
// dumps", Future Generation Computer Systems 22 (2006) 303-312: checkpoint 5 min, restart 10 min,
// MTBF 24 h / 6 h / 15 min -> optimum about 117 / 57 / 9.1 min; Young's formula 120 / 60 / 12.2.
struct DalyCase {
  double mtbf_minutes;
  double daly_minutes;
  double young_minutes;
};
constexpr DalyCase kDalyCases[] = {{24 * 60, 117, 120}, {6 * 60, 57, 60}, {15, 9.1, 12.2}};

TEST(FormulasTest, YoungMatchesDaly2006Table) {
  for (const DalyCase& c : kDalyCases) {
    EXPECT_NEAR(YoungIntervalSeconds(5 * kMinute, c.mtbf_minutes * kMinute) / kMinute,
                c.young_minutes, 0.05)
        << "MTBF " << c.mtbf_minutes << " min";
  }
}

TEST(FormulasTest, DalyHigherOrderMatchesDaly2006Table) {
  for (const DalyCase& c : kDalyCases) {
    EXPECT_NEAR(DalyIntervalSeconds(5 * kMinute, c.mtbf_minutes * kMinute) / kMinute,
                c.daly_minutes, 0.5)
        << "MTBF " << c.mtbf_minutes << " min";
  }
}

TEST(FormulasTest, DalyFallsBackToMtbfWhenCheckpointExceedsTwiceMtbf) {
  EXPECT_DOUBLE_EQ(DalyIntervalSeconds(10 * kHour, 4 * kHour), 4 * kHour);
}

// Daly's estimate approximates the true optimum of his complete model; they agree closely.
TEST(FormulasTest, NumericOptimumOfCompleteModelIsNearDalysEstimate) {
  for (const DalyCase& c : kDalyCases) {
    const double optimum =
        OptimalIntervalSeconds(5 * kMinute, 10 * kMinute, c.mtbf_minutes * kMinute) / kMinute;
    EXPECT_NEAR(optimum, c.daly_minutes, 0.03 * c.daly_minutes) << "MTBF " << c.mtbf_minutes;
    // ... and is a maximum of the ETTR.
    const double at =
        ExpectedEttr(optimum * kMinute, 5 * kMinute, 10 * kMinute, c.mtbf_minutes * kMinute);
    EXPECT_GT(at, ExpectedEttr(0.8 * optimum * kMinute, 5 * kMinute, 10 * kMinute,
                               c.mtbf_minutes * kMinute));
    EXPECT_GT(at, ExpectedEttr(1.25 * optimum * kMinute, 5 * kMinute, 10 * kMinute,
                               c.mtbf_minutes * kMinute));
  }
}

TEST(FormulasTest, ExpectedWallWithoutFailuresIsWorkPlusCheckpoints) {
  // 10 segments of 1 h, 9 checkpoints of 5 min (none after the last segment).
  const double wall = ExpectedWallSeconds(10 * kHour, kHour, 5 * kMinute, 10 * kMinute, 1e15);
  EXPECT_NEAR(wall, 10 * kHour + 9 * 5 * kMinute, 1.0);
  // A remainder segment: 10.5 h of work -> 10 checkpoints.
  EXPECT_NEAR(ExpectedWallSeconds(10.5 * kHour, kHour, 5 * kMinute, 0, 1e15),
              10.5 * kHour + 10 * 5 * kMinute, 1.0);
}

TEST(FormulasTest, ExpectedSegmentMatchesFirstOrderForRareFailures) {
  // For L, R << M: E ~ L + L (L/2 + R) / M.
  const double m = 1000 * kHour, l = kHour, r = 10 * kMinute;
  EXPECT_NEAR(ExpectedSegmentSeconds(l, r, m), l + l * (l / 2 + r) / m, 0.5);
}

}  // namespace
}  // namespace titan::sim
