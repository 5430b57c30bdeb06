#include "src/supervisor/inject.h"

#include <gtest/gtest.h>

namespace titan::supervisor {
namespace {

TEST(ParseInjection, CrashAtRankAndStep) {
  auto r = ParseInjection("crash@rank=1,step=50");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->kind, InjectKind::kCrash);
  EXPECT_EQ(r->rank, 1);
  EXPECT_EQ(r->step, 50);
  EXPECT_EQ(r->times, 1);
}

TEST(ParseInjection, SlowNeedsFactorAboveOne) {
  auto r = ParseInjection("slow@rank=2,factor=1.5");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->factor, 1.5);
  EXPECT_EQ(r->step, 0);
  EXPECT_FALSE(ParseInjection("slow@rank=2").ok());
  EXPECT_FALSE(ParseInjection("slow@rank=2,factor=0.5").ok());
}

TEST(ParseInjection, EveryMeansRepeated) {
  auto r = ParseInjection("crash@every=60s");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->every_seconds, 60);
  EXPECT_GT(r->times, 1000);
}

TEST(ParseInjection, RejectsBadInputWithTheOffendingPart) {
  for (const char* bad :
       {"", "boom@rank=1,step=1", "crash", "crash@rank=1", "crash@rank=x,step=1",
        "crash@rank=1,step=1,color=red", "crash@rank=-1,step=2", "node-loss@rank=1,step=3",
        "crash@step=1,at=2", "hang@step", "crash@rank=1,node=0,step=1", "crash@step=1,factor=2"}) {
    auto r = ParseInjection(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("--inject"), std::string_view::npos);
    }
  }
  auto r = ParseInjection("crash@rank=1,step=1,color=red");
  EXPECT_NE(r.status().message().find("color"), std::string_view::npos);
}

TEST(DrawFromSeed, DeterministicAndInRange) {
  for (uint64_t i = 0; i < 100; ++i) {
    int a = DrawFromSeed(42, i, 4);
    EXPECT_EQ(a, DrawFromSeed(42, i, 4));
    EXPECT_GE(a, 0);
    EXPECT_LT(a, 4);
  }
  int differ = 0;
  for (uint64_t i = 0; i < 20; ++i) differ += DrawFromSeed(1, i, 1000) != DrawFromSeed(2, i, 1000);
  EXPECT_GT(differ, 10);
}

TEST(Injector, StepTriggerFiresOncePerBudgetOnlyOnTheOwningNode) {
  Injection inj = ParseInjection("crash@rank=3,step=5").value();
  Injector node0({inj}, 7), node1({inj}, 7);
  node0.Arm(0, 2, 0, 2, 4);
  node1.Arm(1, 2, 2, 2, 4);
  EXPECT_TRUE(node0.OnStep(1, 10).empty());  // not its rank
  EXPECT_TRUE(node1.OnStep(3, 4).empty());   // too early
  auto fired = node1.OnStep(3, 5);
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].rank, 3);
  EXPECT_TRUE(node1.OnStep(3, 6).empty());
  node1.Arm(1, 2, 2, 2, 4);  // after the restart the step is redone: no second crash
  EXPECT_TRUE(node1.OnStep(3, 5).empty());
}

TEST(Injector, TimesAllowsRepeatsAcrossGenerations) {
  Injector in({ParseInjection("crash@node=1,step=2,times=2").value()}, 0);
  int fired = 0;
  for (int gen = 0; gen < 4; ++gen) {
    in.Arm(1, 2, 1, 1, 2);
    fired += static_cast<int>(in.OnStep(1, 2).size());
  }
  EXPECT_EQ(fired, 2);
}

TEST(Injector, EveryFiresPeriodically) {
  Injector in({ParseInjection("hang@rank=0,every=10").value()}, 0);
  in.Arm(0, 1, 0, 1, 1);
  EXPECT_TRUE(in.OnTime(9.9).empty());
  EXPECT_EQ(in.OnTime(10.0).size(), 1u);
  EXPECT_TRUE(in.OnTime(15).empty());
  in.Arm(0, 1, 0, 1, 1);
  EXPECT_EQ(in.OnTime(20.5).size(), 1u);
}

}  // namespace
}  // namespace titan::supervisor
