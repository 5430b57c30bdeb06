#include "src/predict/node_risk.h"

#include <cmath>

#include <gtest/gtest.h>

#include "src/sim/formulas.h"

namespace titan::predict {
namespace {

NodeRiskTable Table() {
  auto t = NodeRiskTable::FromJson(
      nlohmann::json::parse(R"({"horizon_days": 30, "nodes": [{"node_name": "a", "p": 0.01},
        {"node_name": "b", "p": 0.5}, {"node_name": "c", "p": 0.02}]})"),
      "risk.json");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

TEST(NodeRiskTest, HazardsAddUpToTheJobsMtbf) {
  NodeRiskTable t = Table();
  const double h = 30 * 86400.0;
  EXPECT_NEAR(t.Hazard("b"), std::log(2.0) / h, 1e-15);
  EXPECT_EQ(t.P("unknown"), 0.02);  // the median of the table
  EXPECT_NEAR(JobMtbfSeconds(t, {"a", "c"}), h / (-std::log(0.99) - std::log(0.98)), 1e-6);
  IntervalAdvice i = AdviseCheckpointInterval(JobMtbfSeconds(t, {"a", "c"}), 30);
  EXPECT_EQ(i.daly_seconds, sim::DalyIntervalSeconds(30, i.mtbf_seconds));
  EXPECT_EQ(i.young_seconds, std::sqrt(2 * 30 * i.mtbf_seconds));
}

TEST(NodeRiskTest, DrainOnlyWhenOverTheThresholdAndTheLossExceedsTheMove) {
  // 0.5 x 16 GPUs x (3600/2 + 60) s = 4.13 GPU-h expected loss > 16 x 60 s = 0.27 GPU-h.
  DrainAdvice d = AdviseDrain(0.5, 0.3, 16, 3600, 60, 60);
  EXPECT_TRUE(d.drain);
  EXPECT_NEAR(d.expected_lost_gpu_hours, 0.5 * 16 * 1860 / 3600, 1e-12);
  EXPECT_NEAR(d.move_cost_gpu_hours, 16 * 60 / 3600.0, 1e-12);
  EXPECT_NE(d.ToJson()["arithmetic"].get<std::string>().find("> move cost"), std::string::npos);
  EXPECT_FALSE(AdviseDrain(0.2, 0.3, 16, 3600, 60, 60).drain);    // under the threshold
  EXPECT_FALSE(AdviseDrain(0.5, 0.3, 16, 60, 10, 100000).drain);  // moving costs more
  EXPECT_FALSE(AdviseDrain(0.9, 0, 16, 3600, 60, 60).drain);      // threshold 0: off
}

TEST(NodeRiskTest, LowestRiskKeepsTheCandidatesOrder) {
  NodeRiskTable t = Table();
  EXPECT_EQ(LowestRisk(t, {"b", "c", "a"}, 2), (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(LowestRisk(t, {"b", "a"}, 5), (std::vector<std::string>{"b", "a"}));
}

TEST(NodeRiskTest, ABadFileSaysWhatIsWrong) {
  auto bad = NodeRiskTable::FromJson(nlohmann::json::parse(R"({"nodes": []})"), "r.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("r.json: not a titan predict risk result"),
            std::string::npos);
  bad = NodeRiskTable::FromJson(
      nlohmann::json::parse(R"({"horizon_days": 30, "nodes": [{"node_name": "x", "p": 1.5}]})"),
      "r.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("p 1.5 is not a probability"), std::string::npos);
  EXPECT_FALSE(NodeRiskTable::Read("/nonexistent/risk.json").ok());
}

}  // namespace
}  // namespace titan::predict
