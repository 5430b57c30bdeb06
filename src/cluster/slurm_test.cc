#include "src/cluster/slurm.h"

#include <map>
#include <string>

#include <gtest/gtest.h>

namespace titan::cluster {
namespace {

GetEnvFn FakeEnv(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(SlurmEnvTest, OutsideSlurmIsNothing) {
  auto env = ReadSlurmEnv(FakeEnv({}));
  ASSERT_TRUE(env.ok());
  EXPECT_FALSE(env->has_value());
}

TEST(SlurmEnvTest, ReadsTheJobItsNodesAndThisNode) {
  auto env = ReadSlurmEnv(FakeEnv({{"SLURM_JOB_ID", "42"},
                                   {"SLURM_JOB_NODELIST", "n[1-3]"},
                                   {"SLURM_NNODES", "3"},
                                   {"SLURM_NODEID", "1"},
                                   {"SLURMD_NODENAME", "n2"},
                                   {"SLURM_RESTART_COUNT", "2"}}));
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  ASSERT_TRUE(env->has_value());
  const SlurmEnv& e = **env;
  EXPECT_EQ(e.job_id, "42");
  EXPECT_EQ(e.nodes, (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(e.node_index, 1);
  EXPECT_EQ(e.node_name, "n2");
  EXPECT_EQ(e.restart_count, 2);
}

TEST(SlurmEnvTest, TheNodeNameFallsBackToItsPlaceInTheList) {
  auto env = ReadSlurmEnv(
      FakeEnv({{"SLURM_JOB_ID", "7"}, {"SLURM_NODELIST", "a,b"}, {"SLURM_NODEID", "1"}}));
  ASSERT_TRUE(env.ok());
  EXPECT_EQ((*env)->node_name, "b");
}

TEST(SlurmEnvTest, InconsistentVariablesAreNamed) {
  struct Case {
    std::map<std::string, std::string> vars;
    const char* says;
  } cases[] = {
      {{{"SLURM_JOB_ID", "1"}}, "SLURM_JOB_NODELIST is not"},
      {{{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "n[1-"}}, "SLURM_JOB_NODELIST"},
      {{{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_NNODES", "3"}},
       "SLURM_NNODES='3' disagrees"},
      {{{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_NODEID", "2"}},
       "SLURM_NODEID='2' is not an index"},
      {{{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "n1"}, {"SLURM_RESTART_COUNT", "x"}},
       "SLURM_RESTART_COUNT='x'"},
      {{{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_STEP_NUM_TASKS", "4"}},
       "runs 4 tasks on 2 nodes: titan run is one task per node"},
  };
  for (const Case& c : cases) {
    auto env = ReadSlurmEnv(FakeEnv(c.vars));
    ASSERT_FALSE(env.ok()) << c.says;
    EXPECT_NE(env.status().message().find(c.says), std::string::npos) << env.status().message();
  }
}

TEST(ScontrolNodesTest, ParsesStatesFlagsAndReasons) {
  const char* text =
      "NodeName=n1 Arch=x86_64 CoresPerSocket=1 State=ALLOCATED+DRAIN ThreadsPerCore=1 "
      "Reason=titan: 2 failures within 1800 s [root@2026-12-02T06:00:00]\n"
      "NodeName=n2 Arch=x86_64 NodeAddr=10.0.0.2 State=IDLE*+NOT_RESPONDING ThreadsPerCore=1\n"
      "NodeName=n3 State=DOWN* Reason=Not responding [slurm@2026-12-02T06:01:00]\n"
      "NodeName=n4 State=MIXED ThreadsPerCore=1\n"
      "garbage line\n";
  auto nodes = ParseScontrolNodes(text);
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[0].name, "n1");
  EXPECT_TRUE(nodes[0].Draining());
  EXPECT_FALSE(nodes[0].Lost());
  EXPECT_EQ(nodes[0].reason, "titan: 2 failures within 1800 s");
  EXPECT_TRUE(nodes[1].NotResponding());
  EXPECT_EQ(nodes[1].addr, "10.0.0.2");
  EXPECT_TRUE(nodes[1].Lost());
  EXPECT_FALSE(nodes[1].Down());
  EXPECT_TRUE(nodes[2].Down());
  EXPECT_EQ(nodes[2].reason, "Not responding");
  EXPECT_FALSE(nodes[3].Lost());
  EXPECT_FALSE(nodes[3].Draining());
}

TEST(ScontrolNodesTest, AKeyInsideAnotherFieldIsNotTakenForIt) {
  auto nodes = ParseScontrolNodes("NodeName=n1 OtherState=DOWN State=IDLE\n");
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].state, "IDLE");
}

TEST(SlurmCommandsTest, DrainAndRequeueArePlainArgumentVectors) {
  EXPECT_EQ(SlurmDrainCommand("n2", "3 failures; it's bad"),
            (std::vector<std::string>{"scontrol", "update", "NodeName=n2", "State=DRAIN",
                                      "Reason=titan: 3 failures; it's bad"}));
  EXPECT_EQ(SlurmRequeueCommand("42"), (std::vector<std::string>{"scontrol", "requeue", "42"}));
}

}  // namespace
}  // namespace titan::cluster
