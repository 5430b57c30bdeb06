#include "src/cluster/k8s/reconcile.h"

#include <gtest/gtest.h>

namespace titan::k8s {
namespace {

constexpr int64_t kS = 1'000'000'000;

NodeView Node(std::string name, int64_t gpus = 2) {
  NodeView n;
  n.name = std::move(name);
  n.ready = true;
  n.gpus = gpus;
  return n;
}

JobView Job(int64_t replicas, int64_t min, int64_t max, int64_t current,
            int64_t delay_ns = 30 * kS) {
  JobView v;
  v.job.name = "llm";
  v.job.replicas = replicas;
  v.job.min_replicas = min;
  v.job.max_replicas = max;
  v.job.scale_down_delay_ns = delay_ns;
  v.job.gpus_per_replica = 1;
  v.workload_replicas = current;
  return v;
}

std::vector<Action> Scales(const Plan& plan) {
  std::vector<Action> out;
  for (const Action& a : plan.actions) {
    if (a.kind == Action::Kind::kScale) out.push_back(a);
  }
  return out;
}

TEST(ReconcileTest, SteadyStateDoesNothing) {
  ReconcileState state;
  Plan plan = Reconcile({Node("a"), Node("b"), Node("c")}, {Job(6, 4, 8, 6)}, 0, &state);
  EXPECT_TRUE(plan.actions.empty());
  EXPECT_EQ(plan.capacity["default/llm"], 6);
}

TEST(ReconcileTest, ReportedNodeIsCordonedAndTheJobShrinksAtOnce) {
  ReconcileState state;
  std::vector<NodeView> nodes = {Node("a"), Node("b"), Node("c")};
  ASSERT_TRUE(Reconcile(nodes, {Job(6, 4, 8, 6)}, 0, &state).actions.empty());
  nodes[1].report = "xid-79";
  Plan plan = Reconcile(nodes, {Job(6, 4, 8, 6)}, 10 * kS, &state);
  ASSERT_EQ(plan.actions.size(), 2u);
  EXPECT_EQ(plan.actions[0].kind, Action::Kind::kCordon);
  EXPECT_EQ(plan.actions[0].node, "b");
  EXPECT_EQ(plan.actions[0].reason, "xid-79");
  auto scales = Scales(plan);
  ASSERT_EQ(scales.size(), 1u);
  EXPECT_EQ(scales[0].from, 6);
  EXPECT_EQ(scales[0].to, 4);
  EXPECT_EQ(state.last_failure_ns, 10 * kS);
  ASSERT_EQ(plan.observations.size(), 1u);
  EXPECT_EQ(plan.observations[0].type, "node_unusable");
  EXPECT_EQ(plan.observations[0].fields["node"], "b");
}

TEST(ReconcileTest, NeverBelowMinReplicas) {
  ReconcileState state;
  std::vector<NodeView> nodes = {Node("a"), Node("b"), Node("c")};
  nodes[1].unschedulable = true;
  nodes[2].ready = false;
  auto scales = Scales(Reconcile(nodes, {Job(6, 4, 8, 6)}, 0, &state));
  ASSERT_EQ(scales.size(), 1u);
  EXPECT_EQ(scales[0].to, 4);  // capacity 2 < min 4
  EXPECT_NE(scales[0].why.find("below minReplicas 4"), std::string::npos);
  Plan hold = Reconcile(nodes, {Job(6, 4, 8, 4)}, kS, &state);
  EXPECT_TRUE(hold.actions.empty());
  ASSERT_EQ(hold.observations.size(), 1u);
  EXPECT_EQ(hold.observations[0].type, "hold");
  // Said once, not at every pass.
  EXPECT_TRUE(Reconcile(nodes, {Job(6, 4, 8, 4)}, 2 * kS, &state).observations.empty());
}

TEST(ReconcileTest, GrowsBackOnlyAfterScaleDownDelaySinceTheLastFailure) {
  ReconcileState state;
  std::vector<NodeView> nodes = {Node("a"), Node("b"), Node("c")};
  Reconcile(nodes, {Job(6, 4, 8, 6)}, 0, &state);
  nodes[2].unschedulable = true;
  ASSERT_EQ(Scales(Reconcile(nodes, {Job(6, 4, 8, 6)}, 100 * kS, &state))[0].to, 4);
  nodes[2].unschedulable = false;  // uncordoned 5 s later
  Plan wait = Reconcile(nodes, {Job(6, 4, 8, 4)}, 105 * kS, &state);
  EXPECT_TRUE(Scales(wait).empty());
  ASSERT_EQ(wait.observations.size(), 2u);
  EXPECT_EQ(wait.observations[0].type, "node_usable");
  EXPECT_EQ(wait.observations[1].type, "grow_wait");
  EXPECT_TRUE(Scales(Reconcile(nodes, {Job(6, 4, 8, 4)}, 129 * kS, &state)).empty());
  auto grow = Scales(Reconcile(nodes, {Job(6, 4, 8, 4)}, 130 * kS, &state));
  ASSERT_EQ(grow.size(), 1u);
  EXPECT_EQ(grow[0].from, 4);
  EXPECT_EQ(grow[0].to, 6);
}

TEST(ReconcileTest, GrowsTowardReplicasNotMaxAndOnlyAsFarAsCapacity) {
  ReconcileState state;
  std::vector<NodeView> nodes = {Node("a", 8), Node("b", 8)};
  auto grow = Scales(Reconcile(nodes, {Job(6, 2, 20, 3)}, 0, &state));
  ASSERT_EQ(grow.size(), 1u);
  EXPECT_EQ(grow[0].to, 6);
  grow = Scales(Reconcile({Node("a", 1)}, {Job(6, 1, 20, 0)}, 0, &state));
  ASSERT_EQ(grow.size(), 1u);
  EXPECT_EQ(grow[0].to, 1);
}

TEST(ReconcileTest, ReplicasLoweredByTheUserShrinks) {
  ReconcileState state;
  auto scales = Scales(Reconcile({Node("a", 8)}, {Job(3, 2, 8, 6)}, 0, &state));
  ASSERT_EQ(scales.size(), 1u);
  EXPECT_EQ(scales[0].to, 3);
  EXPECT_EQ(scales[0].why, "replicas is 3");
}

TEST(ReconcileTest, GoneNodeIsAFailure) {
  ReconcileState state;
  Reconcile({Node("a"), Node("b")}, {Job(4, 2, 4, 4)}, 0, &state);
  Plan plan = Reconcile({Node("a")}, {Job(4, 2, 4, 4)}, 7 * kS, &state);
  EXPECT_EQ(state.last_failure_ns, 7 * kS);
  ASSERT_EQ(Scales(plan).size(), 1u);
  EXPECT_EQ(Scales(plan)[0].to, 2);
}

TEST(ReconcileTest, FailedActionsBackOff) {
  ReconcileState state;
  NodeView bad = Node("b");
  bad.report = "r";
  EXPECT_EQ(Reconcile({bad}, {}, 0, &state).actions.size(), 1u);
  state.CordonFailed("b", 0);
  EXPECT_TRUE(Reconcile({bad}, {}, kS / 2, &state).actions.empty());
  EXPECT_EQ(Reconcile({bad}, {}, kS, &state).actions.size(), 1u);
  state.CordonFailed("b", kS);  // second failure: 2 s
  EXPECT_TRUE(Reconcile({bad}, {}, 2 * kS, &state).actions.empty());
  EXPECT_EQ(Reconcile({bad}, {}, 3 * kS, &state).actions.size(), 1u);
  state.CordonSucceeded("b", 3 * kS);
  EXPECT_TRUE(Reconcile({bad}, {}, 4 * kS, &state).actions.empty());

  std::vector<NodeView> nodes = {Node("a")};
  ASSERT_EQ(Scales(Reconcile(nodes, {Job(4, 1, 4, 4)}, 0, &state)).size(), 1u);
  state.ScaleFailed("default/llm", 0);
  EXPECT_TRUE(Scales(Reconcile(nodes, {Job(4, 1, 4, 4)}, kS / 2, &state)).empty());
  EXPECT_EQ(Scales(Reconcile(nodes, {Job(4, 1, 4, 4)}, kS, &state)).size(), 1u);
  // Jittered (issue 37): the controller draws the delay in [d/2, d]; at 0 it is half the step.
  state.ScaleFailed("default/llm", kS, /*jitter=*/0);  // second failure: 2 s -> 1 s
  EXPECT_TRUE(Scales(Reconcile(nodes, {Job(4, 1, 4, 4)}, 1.9 * kS, &state)).empty());
  EXPECT_EQ(Scales(Reconcile(nodes, {Job(4, 1, 4, 4)}, 2 * kS, &state)).size(), 1u);
}

TEST(ReconcileTest, MissingWorkloadIsSaidOnce) {
  ReconcileState state;
  Plan plan = Reconcile({Node("a")}, {Job(2, 1, 2, -1)}, 0, &state);
  EXPECT_TRUE(plan.actions.empty());
  ASSERT_EQ(plan.observations.size(), 1u);
  EXPECT_EQ(plan.observations[0].type, "no_workload");
  EXPECT_TRUE(Reconcile({Node("a")}, {Job(2, 1, 2, -1)}, kS, &state).observations.empty());
}

}  // namespace
}  // namespace titan::k8s
