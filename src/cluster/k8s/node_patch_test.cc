#include "src/cluster/k8s/node_patch.h"

#include <gtest/gtest.h>

namespace titan::k8s {
namespace {

using nlohmann::json;

constexpr int64_t kWall = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z

json Node(json spec, json annotations = json::object()) {
  return {{"metadata", {{"name", "n1"}, {"resourceVersion", "42"}, {"annotations", annotations}}},
          {"spec", spec}};
}

TEST(NodePatchTest, CordonsTaintsAndKeepsOtherTaints) {
  json other = {{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}};
  auto patch = CordonPatch(Node({{"taints", {other}}}), "xid 79", kWall, false);
  ASSERT_TRUE(patch.ok()) << patch.status().ToString();
  ASSERT_TRUE(patch->has_value());
  const json& p = **patch;
  EXPECT_EQ(p["metadata"]["resourceVersion"], "42");
  EXPECT_EQ(p["metadata"]["annotations"]["titan.io/unhealthy-reason"], "xid 79");
  EXPECT_EQ(p["metadata"]["annotations"]["titan.io/unhealthy-since"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(p["spec"]["unschedulable"], true);
  ASSERT_EQ(p["spec"]["taints"].size(), 2u);
  EXPECT_EQ(p["spec"]["taints"][0], other);
  EXPECT_EQ(p["spec"]["taints"][1], (json{{"key", "titan.io/unhealthy"},
                                          {"value", "xid_79"},
                                          {"effect", "NoSchedule"},
                                          {"timeAdded", "2026-01-01T00:00:00Z"}}));
  EXPECT_FALSE(p["metadata"]["annotations"].contains("titan.io/report-unhealthy"));
}

TEST(NodePatchTest, IdempotentWhenAlreadyCordonedForTheSameReason) {
  json taint = {{"key", "titan.io/unhealthy"}, {"value", "xid_79"}, {"effect", "NoSchedule"}};
  auto patch =
      CordonPatch(Node({{"unschedulable", true}, {"taints", {taint}}}), "xid 79", kWall, false);
  ASSERT_TRUE(patch.ok());
  EXPECT_FALSE(patch->has_value());
  // Another reason replaces titan's taint instead of adding a second one.
  patch = CordonPatch(Node({{"unschedulable", true}, {"taints", {taint}}}), "ecc", kWall, false);
  ASSERT_TRUE(patch.ok() && patch->has_value());
  ASSERT_EQ((**patch)["spec"]["taints"].size(), 1u);
  EXPECT_EQ((**patch)["spec"]["taints"][0]["value"], "ecc");
}

TEST(NodePatchTest, ConsumesTheReportAnnotation) {
  json taint = {{"key", "titan.io/unhealthy"}, {"value", "bad"}, {"effect", "NoSchedule"}};
  json node =
      Node({{"unschedulable", true}, {"taints", {taint}}}, {{"titan.io/report-unhealthy", "bad"}});
  auto patch = CordonPatch(node, "bad", kWall, true);
  ASSERT_TRUE(patch.ok() && patch->has_value());
  EXPECT_TRUE((**patch)["metadata"]["annotations"]["titan.io/report-unhealthy"].is_null());
  EXPECT_TRUE((**patch)["metadata"]["annotations"].contains("titan.io/report-unhealthy"));
}

TEST(NodePatchTest, RefusesWhatIsNoNode) {
  EXPECT_FALSE(CordonPatch(json::array(), "r", kWall, false).ok());
  EXPECT_FALSE(CordonPatch(json{{"metadata", {{"name", "n"}}}}, "r", kWall, false).ok());
  EXPECT_FALSE(CordonPatch(Node({{"taints", "x"}}), "r", kWall, false).ok());
}

TEST(NodePatchTest, TaintValueIsALabelValue) {
  EXPECT_EQ(TaintValue("xid-79"), "xid-79");
  EXPECT_EQ(TaintValue("hang at step 80!"), "hang_at_step_80");
  EXPECT_EQ(TaintValue("  "), "unspecified");
  EXPECT_EQ(TaintValue(std::string(100, 'a')).size(), 63u);
}

}  // namespace
}  // namespace titan::k8s
