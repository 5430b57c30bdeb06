// Landmark features, metrics and the risk models on small histories built here.
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/fleet/fleet_jsonl.h"
#include "src/predict/features.h"
#include "src/predict/metrics.h"
#include "src/predict/models.h"

namespace titan::predict {
namespace {

constexpr double kDay = 86400;

// Ten GPUs on five nodes from day 0; gpu0 fails on days 40 and 70 (staying in service), gpu1 on
// day 100 and leaves; `extra` adds records (to test what features may see).
fleet::FleetHistory MakeHistory(const std::string& extra = "") {
  std::string jsonl;
  for (int g = 0; g < 10; ++g) {
    jsonl += fmt::format(
        R"({{"time":0,"component":"gpu{}","event":"enter","attributes":{{"node_name":"n{}","cage":"{}","batch":"{}"}}}})"
        "\n",
        g, g / 2, g % 3, g < 5 ? "old" : "new");
  }
  jsonl += fmt::format(R"({{"time":{},"component":"gpu0","event":"fail","class":"DBE"}})"
                       "\n",
                       40 * kDay);
  jsonl += fmt::format(R"({{"time":{},"component":"gpu0","event":"fail","class":"OTB"}})"
                       "\n",
                       70 * kDay);
  jsonl += fmt::format(R"({{"time":{},"component":"gpu1","event":"fail","class":"DBE"}})"
                       "\n",
                       100 * kDay);
  jsonl += fmt::format(R"({{"time":{},"component":"gpu1","event":"leave"}})"
                       "\n",
                       100 * kDay);
  jsonl += extra;
  jsonl += fmt::format(R"({{"time":{},"event":"end"}})"
                       "\n",
                       200 * kDay);
  fleet::HistoryBuilder b;
  fleet::ReadFleetJsonl(jsonl, "test", &b);
  auto h = std::move(b).Build();
  EXPECT_TRUE(h.ok());
  return std::move(h).value();
}

double Feature(const Landmarks& l, const FeatureSpace& s, size_t row, const std::string& name) {
  return l.x[row * s.p() + s.Column(name)];
}

TEST(FeaturesTest, CountsOutcomesAndNoLookAhead) {
  const fleet::FleetHistory h = MakeHistory();
  FeatureOptions fo;
  fo.horizon_seconds = 30 * kDay;
  const FeatureSpace space = FeatureSpace::Make(h, fo);
  ASSERT_GE(space.Column("node_name_failures_30d"), 0);
  ASSERT_GE(space.Column("batch=old"), 0);     // "new" and "old" tie at 5: the first is reference
  EXPECT_LT(space.Column("node_name=n0"), 0);  // unit keys never become one-hot columns
  LandmarkOptions lo;
  lo.origins_seconds = {60 * kDay, 90 * kDay};
  const Landmarks l = BuildLandmarks(h, space, lo);
  ASSERT_EQ(l.rows.size(), 20u);
  // gpu0 at day 60: one failure so far (day 40, within 30 d? no: 20 d ago -> yes), fails again
  // on day 70 (follow-up 10 d, an event).
  const LandmarkRow& g0 = l.rows[0];
  EXPECT_EQ(h.components()[g0.component].id, "gpu0");
  EXPECT_TRUE(g0.event);
  EXPECT_DOUBLE_EQ(g0.follow_seconds, 10 * kDay);
  EXPECT_NEAR(std::expm1(Feature(l, space, 0, "comp_failures")), 1, 1e-6);
  EXPECT_NEAR(std::expm1(Feature(l, space, 0, "comp_failures_30d")), 1, 1e-6);
  // gpu1 shares node n0: one failure at its node in the last 30 days.
  EXPECT_NEAR(std::expm1(Feature(l, space, 1, "node_name_failures_30d")), 1, 1e-6);
  EXPECT_FALSE(l.rows[1].event);
  // At day 90 gpu1 fails on day 100 (within 30 d) and leaves.
  EXPECT_TRUE(l.rows[11].event);
  EXPECT_DOUBLE_EQ(l.rows[11].follow_seconds, 10 * kDay);
  EXPECT_NEAR(std::expm1(Feature(l, space, 10, "comp_failures")), 2, 1e-6);

  // Records after an origin change outcomes but never features at it.
  const fleet::FleetHistory later =
      MakeHistory(fmt::format(R"({{"time":{},"component":"gpu5","event":"fail","class":"DBE"}})"
                              "\n"
                              R"({{"time":{},"component":"gpu5","event":"repair"}})"
                              "\n",
                              61 * kDay, 62 * kDay));
  const Landmarks l2 = BuildLandmarks(later, FeatureSpace::Make(later, fo), lo);
  ASSERT_EQ(l2.rows.size(), l.rows.size());
  for (size_t i = 0; i < 10; ++i) {  // the day-60 rows
    for (int c = 0; c < space.p(); ++c) {
      EXPECT_EQ(l2.x[i * space.p() + c], l.x[i * space.p() + c]) << space.names[c] << " row " << i;
    }
  }
  EXPECT_TRUE(l2.rows[5].event);  // gpu5's new failure is its outcome
}

TEST(FeaturesTest, SamplingKeepsEveryEventAndWeighsTheRest) {
  const fleet::FleetHistory h = MakeHistory();
  FeatureOptions fo;
  fo.horizon_seconds = 30 * kDay;
  const FeatureSpace space = FeatureSpace::Make(h, fo);
  LandmarkOptions lo;
  for (int d = 30; d <= 150; d += 30) lo.origins_seconds.push_back(d * kDay);
  lo.non_event_fraction = 0.5;
  const Landmarks l = BuildLandmarks(h, space, lo);
  int events = 0;
  for (const LandmarkRow& r : l.rows) {
    events += r.event;
    EXPECT_EQ(r.weight, r.event ? 1.0 : 2.0);
  }
  EXPECT_EQ(events, 3);
  EXPECT_LT(l.rows.size(), 49u);
}

TEST(MetricsTest, HandComputedConcordanceTopKAndLift) {
  // One origin, horizon 10: two failures (at 2 and 5) and four rows that reached 10.
  std::vector<ScoredRow> rows = {{0, 2, true, 0.9, 0},   {0, 5, true, 0.3, 1},
                                 {0, 10, false, 0.5, 2}, {0, 10, false, 0.2, 3},
                                 {0, 10, false, 0.1, 4}, {0, 10, false, 0.05, 5}};
  Metrics m = Evaluate(rows, 10);
  // Harrell: event@2 (0.9) vs 5 others: all lower -> 5/5; event@5 (0.3) vs the 4 at 10:
  // higher than 0.2, 0.1, 0.05, lower than 0.5 -> 3/4. (8) / 9.
  EXPECT_NEAR(m.c_index, 8.0 / 9.0, 1e-12);
  EXPECT_NEAR(m.c_index_uno, 8.0 / 9.0, 1e-12);  // no censoring: weights are 1
  // AUC: cases {0.9, 0.3} vs controls {0.5, 0.2, 0.1, 0.05}: 4 + 3 of 8.
  EXPECT_NEAR(m.auc, 7.0 / 8.0, 1e-12);
  // Top 10% of 6 rows = 1 row (0.9, failed): precision 1, recall 1/2, lift 1 / (2/6) = 3.
  EXPECT_NEAR(m.precision_at.at(0.1), 1.0, 1e-12);
  EXPECT_NEAR(m.recall_at.at(0.1), 0.5, 1e-12);
  EXPECT_NEAR(m.lift_at.at(0.1), 3.0, 1e-12);
  // Brier: (1-0.9)^2 + (1-0.3)^2 + 0.25 + 0.04 + 0.01 + 0.0025, over 6.
  EXPECT_NEAR(m.brier, (0.01 + 0.49 + 0.25 + 0.04 + 0.01 + 0.0025) / 6, 1e-12);
  EXPECT_EQ(m.rows, 6);
  EXPECT_EQ(m.events, 2);
  // The same prediction for everyone: concordance 1/2, AUC 1/2.
  for (ScoredRow& r : rows) r.p = 0.3;
  m = Evaluate(rows, 10);
  EXPECT_NEAR(m.c_index, 0.5, 1e-12);
  EXPECT_NEAR(m.auc, 0.5, 1e-12);
}

TEST(MetricsTest, CensoredRowsAreWeightedNotCountedAsFailures) {
  // Row 3 left service at 4 without failing: G drops to 3/4 after 4 (4 at risk... then 3).
  std::vector<ScoredRow> rows = {
      {0, 2, true, 0.9, 0}, {0, 4, false, 0.8, 1}, {0, 6, true, 0.4, 2}, {0, 10, false, 0.1, 3}};
  Metrics m = Evaluate(rows, 10);
  // Harrell: event@2 vs 3 later rows: all lower -> 3; event@6 vs row@10: higher -> 1. 4/4.
  EXPECT_NEAR(m.c_index, 1.0, 1e-12);
  // G(6-) = 1 - 1/3 (censored at 4 with 3 at risk): the failure at 6 weighs 1.5 in the Brier.
  const double g6 = 2.0 / 3.0;
  EXPECT_NEAR(m.brier, ((1 - 0.9) * (1 - 0.9) + (1 - 0.4) * (1 - 0.4) / g6 + 0.01 / g6) / 4, 1e-12);
}

TEST(ModelsTest, EveryModelFitsPredictsProbabilitiesAndRoundTrips) {
  const fleet::FleetHistory h = MakeHistory();
  FeatureOptions fo;
  fo.horizon_seconds = 30 * kDay;
  const FeatureSpace space = FeatureSpace::Make(h, fo);
  LandmarkOptions lo;
  for (int d = 10; d <= 160; d += 10) lo.origins_seconds.push_back(d * kDay);
  const Landmarks train = BuildLandmarks(h, space, lo);
  for (const std::string& name : ModelNames()) {
    SCOPED_TRACE(name);
    auto model = MakeModel(name);
    ASSERT_NE(model, nullptr);
    ASSERT_TRUE(model->Fit(train, space).ok());
    std::vector<double> p = model->Predict(train);
    ASSERT_EQ(p.size(), train.rows.size());
    for (double x : p) {
      EXPECT_GE(x, 0);
      EXPECT_LE(x, 1);
    }
    auto again = MakeModel(name);
    ASSERT_TRUE(again->Load(nlohmann::json::parse(model->Save().dump()), space).ok());
    std::vector<double> q = again->Predict(train);
    for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(q[i], p[i], 1e-6);
  }
  EXPECT_EQ(MakeModel("nope"), nullptr);
}

}  // namespace
}  // namespace titan::predict
