#include "src/detect/straggler.h"

#include <algorithm>
#include <limits>
#include <random>
#include <tuple>

#include <gtest/gtest.h>

namespace titan {
namespace {

constexpr int64_t kStepNs = 1'000'000'000;  // 1 s steps

struct Report {
  int64_t rank, step, duration_ns;
};

// `ranks` ranks, `steps` steps of ~1 s with +-1 % uniform noise; `slow_rank` takes `slowdown`
// longer (fraction).
std::vector<Report> Job(int ranks, int steps, int slow_rank, double slowdown, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(-0.01, 0.01);
  std::vector<Report> reports;
  for (int s = 0; s < steps; ++s) {
    for (int r = 0; r < ranks; ++r) {
      const double factor = 1 + noise(rng) + (r == slow_rank ? slowdown : 0);
      reports.push_back({r, s, static_cast<int64_t>(double(kStepNs) * factor)});
    }
  }
  return reports;
}

std::vector<RankScore> Score(const std::vector<Report>& reports,
                             StragglerScorerOptions options = {}) {
  StragglerScorer scorer(options);
  for (const Report& r : reports) EXPECT_TRUE(scorer.Observe(r.rank, r.step, r.duration_ns).ok());
  return scorer.Scores();
}

TEST(StragglerScorerTest, RankTwentyPercentSlowerIsFlaggedWithItsLateness) {
  std::vector<RankScore> scores = Score(Job(8, 100, 3, 0.20, 1));
  ASSERT_EQ(scores.size(), 8u);
  for (const RankScore& s : scores) {
    EXPECT_EQ(s.steps_seen, 64) << "rank " << s.rank;  // the window
    if (s.rank == 3) {
      EXPECT_TRUE(s.is_straggler);
      EXPECT_NEAR(double(s.median_lateness_ns), 0.20 * kStepNs, 0.01 * kStepNs);
      EXPECT_GT(s.score, 3.5);
    } else {
      EXPECT_FALSE(s.is_straggler) << "rank " << s.rank << " score " << s.score;
      EXPECT_LT(std::abs(double(s.median_lateness_ns)), 0.01 * kStepNs);
    }
  }
}

TEST(StragglerScorerTest, OutOfOrderReportsAndMissedStepsGiveTheSameVerdict) {
  std::vector<Report> reports = Job(8, 100, 3, 0.20, 2);
  // Rank 5 misses every third step; everything arrives shuffled within the window.
  std::erase_if(reports, [](const Report& r) { return r.rank == 5 && r.step % 3 == 0; });
  std::mt19937_64 rng(3);
  for (size_t begin = 0; begin < reports.size(); begin += 40) {
    std::shuffle(
        reports.begin() + static_cast<std::ptrdiff_t>(begin),
        reports.begin() + static_cast<std::ptrdiff_t>(std::min(begin + 40, reports.size())), rng);
  }
  std::vector<RankScore> scores = Score(reports);
  ASSERT_EQ(scores.size(), 8u);
  for (const RankScore& s : scores) {
    EXPECT_EQ(s.is_straggler, s.rank == 3) << "rank " << s.rank << " score " << s.score;
  }
  EXPECT_LT(scores[5].steps_seen, 64);
  EXPECT_GE(scores[5].steps_seen, 40);
  EXPECT_NEAR(double(scores[3].median_lateness_ns), 0.20 * kStepNs, 0.01 * kStepNs);
}

TEST(StragglerScorerTest, TwoRanksTheSlowerOneIsFlagged) {
  std::vector<RankScore> scores = Score(Job(2, 50, 1, 0.10, 4));
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_FALSE(scores[0].is_straggler);
  EXPECT_LT(scores[0].median_lateness_ns, 0);
  EXPECT_TRUE(scores[1].is_straggler);
  EXPECT_NEAR(double(scores[1].median_lateness_ns), 0.10 * kStepNs, 0.01 * kStepNs);
}

TEST(StragglerScorerTest, HealthyJobHasNoStraggler) {
  for (const RankScore& s : Score(Job(16, 200, -1, 0, 5))) {
    EXPECT_FALSE(s.is_straggler) << "rank " << s.rank << " score " << s.score;
  }
}

TEST(StragglerScorerTest, NoiseFreeDurationsDoNotDivideByZero) {
  std::vector<Report> reports;
  for (int s = 0; s < 30; ++s) {
    for (int r = 0; r < 4; ++r) reports.push_back({r, s, r == 2 ? 1'100'000 : 1'000'000});
  }
  std::vector<RankScore> scores = Score(reports);
  for (const RankScore& s : scores) {
    EXPECT_TRUE(std::isfinite(s.score));
    EXPECT_EQ(s.is_straggler, s.rank == 2) << "rank " << s.rank;
  }
  EXPECT_EQ(scores[2].median_lateness_ns, 100'000);
  EXPECT_EQ(scores[0].median_lateness_ns, 0);
}

TEST(StragglerScorerTest, ManyRanksUsePooledScale) {
  // Above kExactPeerRanks the scale comes from the pooled lateness; the verdict is the same.
  std::vector<RankScore> scores = Score(Job(100, 20, 42, 0.20, 6));
  ASSERT_EQ(scores.size(), 100u);
  for (const RankScore& s : scores) EXPECT_EQ(s.is_straggler, s.rank == 42) << "rank " << s.rank;
}

TEST(StragglerScorerTest, BoundedMemoryAndInputErrors) {
  StragglerScorerOptions options;
  options.max_ranks = 4;
  options.window_steps = 8;
  StragglerScorer scorer(options);
  for (int r = 0; r < 4; ++r) ASSERT_TRUE(scorer.Observe(r + 100, 0, 1000).ok());
  Status full = scorer.Observe(7, 0, 1000);
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(full.message().find("rank 7"), std::string_view::npos);
  EXPECT_EQ(scorer.ranks(), 4);
  EXPECT_EQ(scorer.Observe(-1, 0, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(scorer.Observe(100, -1, 1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(scorer.Observe(100, 0, -1).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(scorer.Observe(100, 1'000'000, 1000).ok());  // window jumps ahead
  ASSERT_TRUE(scorer.Observe(101, 5, 1000).ok());          // far behind: dropped
  EXPECT_EQ(scorer.stale_reports(), 1);
  std::vector<RankScore> scores = scorer.Scores();
  ASSERT_EQ(scores.size(), 4u);
  EXPECT_EQ(scores[0].rank, 100);
  for (const RankScore& s : scores) EXPECT_EQ(s.steps_seen, 0);
  // The largest step number works (no overflow walking the window).
  const int64_t last = std::numeric_limits<int64_t>::max();
  ASSERT_TRUE(scorer.Observe(100, last, 1000).ok());
  ASSERT_TRUE(scorer.Observe(101, last, 3000).ok());
  scores = scorer.Scores();
  EXPECT_EQ(scores[0].steps_seen, 1);
  EXPECT_EQ(scores[1].median_lateness_ns, 2000);
}

TEST(StragglerScorerTest, ForgetFreesThePlaceOfARankThatLeft) {
  StragglerScorerOptions options;
  options.max_ranks = 2;
  StragglerScorer scorer(options);
  ASSERT_TRUE(scorer.Observe(5, 0, 1000).ok());
  ASSERT_TRUE(scorer.Observe(6, 0, 3000).ok());
  EXPECT_EQ(scorer.Observe(7, 0, 1000).code(), StatusCode::kResourceExhausted);
  scorer.Forget(5);
  scorer.Forget(42);  // never seen: nothing happens
  ASSERT_TRUE(scorer.Observe(7, 0, 1000).ok());
  const std::vector<RankScore> scores = scorer.Scores();
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_EQ(scores[0].rank, 6);
  EXPECT_EQ(scores[0].median_lateness_ns, 2000);  // against rank 7 only: 5's report is gone
  EXPECT_EQ(scores[1].rank, 7);
}

TEST(StragglerScorerTest, AJobThatStartsOverAfterItsRanksWereForgottenIsScored) {
  // A healthy job of 100 steps, then the same ranks' new processes start over at step 0 with rank
  // 2 slow for 20 steps. Its earlier timeline must neither drop the new steps as stale nor dilute
  // them with the healthy steps 20..99 it left.
  StragglerScorer scorer;
  for (const Report& r : Job(4, 100, -1, 0, 1))
    ASSERT_TRUE(scorer.Observe(r.rank, r.step, r.duration_ns).ok());
  for (int rank = 0; rank < 4; ++rank) scorer.Forget(rank);
  for (const Report& r : Job(4, 20, 2, 0.5, 2))
    ASSERT_TRUE(scorer.Observe(r.rank, r.step, r.duration_ns).ok());
  EXPECT_EQ(scorer.stale_reports(), 0);
  const std::vector<RankScore> scores = scorer.Scores();
  ASSERT_EQ(scores.size(), 4u);
  for (const RankScore& s : scores) {
    EXPECT_EQ(s.steps_seen, 20) << "rank " << s.rank;
    EXPECT_EQ(s.is_straggler, s.rank == 2) << "rank " << s.rank << " score " << s.score;
  }
}

}  // namespace
}  // namespace titan
