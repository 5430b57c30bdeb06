// The survival estimators against R's survival 3.5-3 (Debian r-cran-survival) on a small
// counting-process data set with ties, delayed entry, two causes and clusters. The reference
// numbers were printed by R with options(digits = 15):
//   survfit(Surv(start, stop, event) ~ 1); coxph(Surv(start, stop, event) ~ x + g,
//   ties = "efron", cluster = id); survfit(Surv(start, stop, factor(cause)) ~ 1, id = uid)
// (the larger side-by-side comparison on the Titan data runs R itself: predict_r_test).
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "src/predict/cox.h"
#include "src/predict/survfit.h"

namespace titan::predict {
namespace {

struct Row {
  double start, stop;
  int cause;  // 0 censored, 1 or 2
  double x;
  char g;
  uint32_t id;
};

const std::vector<Row> kRows = {
    {0, 3, 1, 1, 'a', 1},  {0, 5, 0, 0, 'b', 2},  {2, 6, 2, 1, 'c', 3}, {0, 4, 1, 1, 'a', 4},
    {1, 4, 2, 0, 'b', 5},  {0, 7, 0, 0, 'c', 6},  {0, 2, 1, 1, 'a', 7}, {3, 8, 1, 0, 'b', 8},
    {0, 6, 0, 0, 'c', 9},  {0, 9, 2, 1, 'a', 10}, {4, 9, 0, 0, 'b', 1}, {0, 3, 1, 1, 'c', 2},
    {0, 5, 2, 1, 'a', 3},  {2, 7, 0, 0, 'b', 4},  {0, 8, 1, 0, 'c', 5}, {1, 6, 1, 1, 'a', 6},
    {0, 10, 0, 0, 'b', 7}, {0, 4, 2, 1, 'c', 8},  {5, 9, 1, 0, 'a', 9}, {0, 2, 0, 0, 'b', 10}};

std::vector<Interval> Intervals() {
  std::vector<Interval> v;
  for (const Row& r : kRows) v.push_back({r.start, r.stop, r.cause - 1, r.id});
  return v;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol,
                const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << what << " [" << i << "]";
  }
}

TEST(KaplanMeierTest, EqualsRsSurvfitWithDelayedEntry) {
  SurvivalCurve c = KaplanMeier(Intervals());
  ExpectNear(c.time, {2, 3, 4, 5, 6, 8, 9}, 1e-12, "time");
  ExpectNear(c.n_risk, {15, 15, 14, 12, 11, 6, 4}, 1e-12, "n.risk");
  ExpectNear(c.surv,
             {0.933333333333333, 0.808888888888889, 0.635555555555556, 0.582592592592593,
              0.476666666666667, 0.317777777777778, 0.158888888888889},
             1e-12, "surv");
  ExpectNear(c.std_err,
             {0.0690065559342354, 0.122549235078457, 0.185738618759897, 0.205120920616577,
              0.249552824621586, 0.381588712634357, 0.628975313990896},
             1e-12, "std.err");
  ExpectNear(c.lower,
             {0.815264045653585, 0.636172324281432, 0.441623850915636, 0.389731684217178,
              0.29227726402774, 0.150423130484728, 0.0463136244938643},
             1e-10, "lower");
  ExpectNear(c.upper,
             {1, 1, 0.914649114535018, 0.870891802460228, 0.777382092537812, 0.671324388237186,
              0.545102640707602},
             1e-10, "upper");
  EXPECT_EQ(c.At(1.9), 1.0);
  EXPECT_NEAR(c.At(7.5), 0.476666666666667, 1e-12);
  EXPECT_EQ(c.Median(), 6);
}

TEST(CoxTest, EqualsRsCoxphEfronWithRobustClusteredVariance) {
  std::vector<double> x;
  for (const Row& r : kRows) {
    x.push_back(r.x);
    x.push_back(r.g == 'b');
    x.push_back(r.g == 'c');
  }
  auto fit = FitCox(Intervals(), x, 3);
  ASSERT_TRUE(fit.ok()) << fit.status().ToString();
  ExpectNear(fit->coef, {1.51759663974674, -0.261960419386617, 0.328855521371311}, 1e-6, "coef");
  ExpectNear(fit->se, {0.866850189081327, 1.11495865252557, 0.722661254959258}, 1e-6, "se");
  ExpectNear(fit->robust_se, {0.449093672157753, 0.886340506574038, 0.50558871159713}, 1e-6,
             "robust se");
  EXPECT_NEAR(fit->loglik_null, -28.815562115715, 1e-9);
  EXPECT_NEAR(fit->loglik, -24.8869414089875, 1e-8);
  EXPECT_EQ(fit->clusters, 10);
  // Breslow's baseline: a step at each event time, d / sum of exp(x beta) at risk.
  ASSERT_EQ(fit->base_time.size(), 7u);
  double s0 = 0;  // at t = 2: rows at risk with start < 2 <= stop
  for (size_t i = 0; i < kRows.size(); ++i) {
    if (kRows[i].start < 2 && 2 <= kRows[i].stop) s0 += std::exp(fit->LinearPredictor(&x[3 * i]));
  }
  EXPECT_NEAR(fit->BaselineCumHaz(2), 1 / s0, 1e-12);
}

TEST(CoxTest, ACollinearCovariateIsAnErrorNotANumber) {
  std::vector<double> x;
  for (const Row& r : kRows) {
    x.push_back(r.x);
    x.push_back(r.x);
  }
  auto fit = FitCox(Intervals(), x, 2);
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("collinear"), std::string::npos);
}

TEST(AalenJohansenTest, EqualsRsMultiStateSurvfit) {
  CumulativeIncidence ci = AalenJohansen(Intervals(), 2);
  ExpectNear(ci.time, {2, 3, 4, 5, 6, 8, 9}, 1e-12, "time");
  // R also lists the censoring-only times 7 and 10, where nothing changes.
  ExpectNear(ci.incidence[0],
             {0.0666666666666667, 0.191111111111111, 0.248888888888889, 0.248888888888889,
              0.301851851851852, 0.460740740740741, 0.540185185185185},
             1e-12, "cause 1");
  ExpectNear(ci.incidence[1],
             {0, 0, 0.115555555555556, 0.168518518518519, 0.221481481481481, 0.221481481481481,
              0.300925925925926},
             1e-12, "cause 2");
  for (size_t k = 0; k < ci.time.size(); ++k) {
    EXPECT_NEAR(ci.event_free[k] + ci.incidence[0][k] + ci.incidence[1][k], 1.0, 1e-12);
  }
}

TEST(NormalQuantileTest, NinetyFivePercent) {
  EXPECT_NEAR(NormalQuantile(0.95), 1.959963984540054, 1e-9);
}

}  // namespace
}  // namespace titan::predict
