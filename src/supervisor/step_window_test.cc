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

}  // namespace
}  // namespace titan
