// Failure rates, repair times and the negative binomial projection on histories whose answers
// are known.
#include <cmath>
#include <random>
#include <string>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/plan/failure_fit.h"

namespace titan::plan {
namespace {

constexpr double kDay = 86400;
constexpr double kStart = 1577836800;  // 2020-01-01

// `components` in service from kStart for `days`; failures as (day, component, class); each
// failed component leaves and a new one enters its node `repair_days` later.
fleet::FleetHistory History(int components, int days,
                            const std::vector<std::tuple<double, int, std::string>>& failures,
                            double repair_days) {
  fleet::HistoryBuilder b;
  for (int c = 0; c < components; ++c) {
    b.Enter(fmt::format("gpu-{}", c), kStart, {{"node_name", fmt::format("n{}", c)}});
  }
  int replacement = 0;
  for (const auto& [day, c, cls] : failures) {
    const std::string id = fmt::format("gpu-{}", c);
    const double t = kStart + day * kDay;
    b.Fail(id, t, cls, "");
    b.Leave(id, t, "");
    b.Enter(fmt::format("new-{}", replacement++), t + repair_days * kDay,
            {{"node_name", fmt::format("n{}", c)}});
  }
  b.End(kStart + days * kDay);
  return std::move(b).Build().value();
}

TEST(FailureFitTest, RatesPerComponentDayByClassAndRepairs) {
  // 100 components for 100 days; 10 failures (6 DBE, 4 OTB) in the last 90 days, each node
  // refilled 2 days later.
  std::vector<std::tuple<double, int, std::string>> failures;
  for (int i = 0; i < 10; ++i) failures.emplace_back(20 + 5 * i, i, i < 6 ? "DBE" : "OTB");
  const fleet::FleetHistory h = History(100, 100, failures, 2);
  const FailureCounts counts(h);
  FitOptions o;
  o.window_days = 90;
  o.restart_only = {"OTB"};
  auto fit = FitFailures(h, counts, o);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  // Exposure: 100 x 90 days less each failed node's 2 days empty.
  EXPECT_NEAR(fit->component_days, 100 * 90 - 10 * 2, 1e-6);
  ASSERT_EQ(fit->classes.size(), 2u);
  EXPECT_EQ(fit->classes[0].name, "DBE");
  EXPECT_EQ(fit->classes[0].failures, 6);
  EXPECT_NEAR(fit->classes[0].per_component_day, 6 / 8980.0, 1e-12);
  EXPECT_TRUE(fit->classes[0].needs_repair);
  EXPECT_FALSE(fit->classes[1].needs_repair);
  // Only the DBE failures need a repair, each 48 h.
  EXPECT_EQ(fit->repairs_measured, 6);
  EXPECT_NEAR(fit->repair_mean_hours, 48, 1e-9);
  EXPECT_NEAR(fit->in_service, 100, 1e-9);
}

TEST(FailureFitTest, AWindowWithoutExposureSaysSo) {
  const fleet::FleetHistory h = History(5, 10, {}, 1);
  const FailureCounts counts(h);
  FitOptions o;
  o.at_seconds = kStart - 10 * kDay;
  auto fit = FitFailures(h, counts, o);
  ASSERT_FALSE(fit.ok());
  EXPECT_THAT(std::string(fit.status().message()), ::testing::HasSubstr("--fit-window"));
}

TEST(DispersionTest, PoissonCountsFitAPoissonAndOverdispersedOnesASmallK) {
  std::mt19937_64 rng(5);
  std::vector<double> expected;
  std::vector<int64_t> poisson, mixed;
  std::gamma_distribution<double> shock(2.0, 0.5);  // mean 1, k = 2
  for (int i = 0; i < 400; ++i) {
    expected.push_back(50);
    poisson.push_back(std::poisson_distribution<int64_t>(50)(rng));
    mixed.push_back(std::poisson_distribution<int64_t>(50 * shock(rng))(rng));
  }
  EXPECT_GT(FitDispersion(expected, poisson), 200);  // infinite or nearly
  const double k = FitDispersion(expected, mixed);
  EXPECT_GT(k, 1.5);
  EXPECT_LT(k, 2.7);
}

TEST(DispersionTest, QuantilesOfPoissonAndNegativeBinomial) {
  // Poisson(10): P(X <= 4) = 0.029, P(X <= 5) = 0.067; P(X <= 15) = 0.951, P(X <= 14) = 0.917.
  EXPECT_EQ(NegativeBinomialQuantile(10, INFINITY, 0.05), 5);
  EXPECT_EQ(NegativeBinomialQuantile(10, INFINITY, 0.95), 15);
  // NB(mu 10, k 1) is geometric with p = 1/11: P(X <= c) = 1 - (10/11)^(c+1); 0.95 -> c = 31.
  EXPECT_EQ(NegativeBinomialQuantile(10, 1, 0.95), 31);
  EXPECT_EQ(NegativeBinomialQuantile(0, 1, 0.95), 0);
  EXPECT_EQ(NegativeBinomialQuantile(5000, INFINITY, 0.5), 5000);  // far from 0: no underflow
}

TEST(ProjectionBacktestTest, AWaveBreaksPoissonButNotTheFittedDispersion) {
  // 1000 components for 6 years; failures at a rate that jumps tenfold for a year in the middle.
  std::mt19937_64 rng(11);
  std::vector<std::tuple<double, int, std::string>> failures;
  int next = 0;
  for (int day = 0; day < 6 * 365; ++day) {
    const double rate = (day > 900 && day < 1300) ? 0.5 : 0.05;  // per day, fleet-wide
    const int64_t n = std::poisson_distribution<int64_t>(rate)(rng);
    for (int64_t i = 0; i < n; ++i) failures.emplace_back(day + 0.5, next++ % 1000, "DBE");
  }
  const fleet::FleetHistory h = History(1000, 6 * 365, failures, 0);
  const FailureCounts counts(h);
  const ProjectionBacktest b = BacktestProjection(counts, 90, 30, 30);
  ASSERT_GT(b.checks.size(), 50u);
  EXPECT_LT(b.poisson_coverage, b.coverage);
  EXPECT_GT(b.coverage, 0.8);
}

}  // namespace
}  // namespace titan::plan
