#include "src/supervisor/step_window.h"

#include <gtest/gtest.h>

namespace titan {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(StepWindowTest, SummarisesEachRankAndKeepsTheSlowestStep) {
  StepWindow w;
  EXPECT_TRUE(w.empty());
  EXPECT_FALSE(w.Due(0));
  const int64_t t0 = 100 * kMs;
  for (int step = 0; step < 50; ++step) {
    w.Add(0, step, 20 * kMs, t0 + step * 20 * kMs);
    w.Add(1, step, (step == 31 ? 900 : 21) * kMs, t0 + step * 20 * kMs);
  }
  EXPECT_FALSE(w.Due(t0 + StepWindow::kWindowNs - 1));
  EXPECT_TRUE(w.Due(t0 + StepWindow::kWindowNs));
  nlohmann::json j = w.Take(t0 + StepWindow::kWindowNs);
  EXPECT_TRUE(w.empty());
  EXPECT_DOUBLE_EQ(j["window_s"].get<double>(), 5.0);
  ASSERT_EQ(j["ranks"].size(), 2u);
  const nlohmann::json& r1 = j["ranks"][1];
  EXPECT_EQ(r1["rank"], 1);
  EXPECT_EQ(r1["first_step"], 0);
  EXPECT_EQ(r1["last_step"], 49);
  EXPECT_EQ(r1["count"], 50);
  EXPECT_DOUBLE_EQ(r1["min_ms"].get<double>(), 21);
  EXPECT_DOUBLE_EQ(r1["p50_ms"].get<double>(), 21);
  EXPECT_DOUBLE_EQ(r1["max_ms"].get<double>(), 900);
  EXPECT_DOUBLE_EQ(j["ranks"][0]["max_ms"].get<double>(), 20);
  // The next window opens with the next step.
  w.Add(0, 50, 20 * kMs, t0 + 6 * StepWindow::kWindowNs);
  EXPECT_FALSE(w.Due(t0 + 6 * StepWindow::kWindowNs + 1));
}

// Where ranks mark their compute, the window reports it beside the (equal) step times.
TEST(StepWindowTest, ReportsEachRanksComputeWhereItIsMarked) {
  StepWindow w;
  for (int step = 0; step < 10; ++step) {
    for (int rank = 0; rank < 3; ++rank) {
      w.AddCompute(rank, (rank == 2 ? 24 : 9) * kMs, step * 30 * kMs);
      w.Add(rank, step, 30 * kMs, step * 30 * kMs);
    }
  }
  nlohmann::json j = w.Take(StepWindow::kWindowNs);
  ASSERT_EQ(j["ranks"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["ranks"][0]["p50_ms"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(j["ranks"][2]["p50_ms"].get<double>(), 30);
  EXPECT_DOUBLE_EQ(j["ranks"][0]["compute_p50_ms"].get<double>(), 9);
  EXPECT_DOUBLE_EQ(j["ranks"][2]["compute_p50_ms"].get<double>(), 24);
  EXPECT_DOUBLE_EQ(j["ranks"][2]["compute_max_ms"].get<double>(), 24);
}

}  // namespace
}  // namespace titan
