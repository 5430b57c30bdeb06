#include "src/cluster/isolation.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "src/base/clock.h"

namespace titan::cluster {
namespace {

IsolationTarget Target() { return {"n2", 3, "2 failures within 1800 s", "slurm-42"}; }

TEST(IsolationActionTest, BuiltInsExpandToOneArgumentPerValue) {
  auto drain = ParseIsolationAction("slurm-drain", "/bin/titan");
  ASSERT_TRUE(drain.ok());
  EXPECT_EQ(ExpandIsolationAction(*drain, Target()),
            (std::vector<std::string>{"scontrol", "update", "NodeName=n2", "State=DRAIN",
                                      "Reason=titan: 2 failures within 1800 s"}));
  auto cordon = ParseIsolationAction("k8s-cordon", "/bin/titan");
  ASSERT_TRUE(cordon.ok());
  EXPECT_EQ(ExpandIsolationAction(*cordon, Target()),
            (std::vector<std::string>{"/bin/titan", "k8s", "cordon", "n2", "--reason",
                                      "2 failures within 1800 s"}));
}

TEST(IsolationActionTest, ACommandGetsShellQuotedValues) {
  auto exec = ParseIsolationAction("exec:notify {node} {rank} {reason} {job}", "/bin/titan");
  ASSERT_TRUE(exec.ok());
  EXPECT_EQ(exec->name, "exec");
  IsolationTarget t = Target();
  t.reason = "it's $(rm -rf /) `bad`";
  auto argv = ExpandIsolationAction(*exec, t);
  ASSERT_EQ(argv.size(), 3u);
  EXPECT_EQ(argv[0], "/bin/sh");
  EXPECT_EQ(argv[2], "notify 'n2' '3' 'it'\\''s $(rm -rf /) `bad`' 'slurm-42'");
  // Without "exec:" too.
  auto bare = ParseIsolationAction("echo {node}", "/bin/titan");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(ExpandIsolationAction(*bare, t)[2], "echo 'n2'");
}

TEST(IsolationActionTest, UnknownPlaceholdersAndEmptySpecsAreRefused) {
  auto typo = ParseIsolationAction("exec:drain {nodes}", "/bin/titan");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("unknown placeholder {nodes}"), std::string::npos);
  EXPECT_FALSE(ParseIsolationAction("exec:", "/bin/titan").ok());
  EXPECT_FALSE(ParseIsolationAction("", "/bin/titan").ok());
  // Shell brace syntax is not a placeholder.
  EXPECT_TRUE(ParseIsolationAction("exec:echo ${HOME} {node}", "/bin/titan").ok());
}

std::vector<IsolationOutcome> RunAll(IsolationRunnerOptions options,
                                     std::vector<IsolationTarget> targets) {
  IsolationRunner runner(std::move(options));
  for (IsolationTarget& t : targets) runner.Submit(std::move(t));
  EXPECT_TRUE(runner.WaitIdle(60 * kNsPerSecond));
  return runner.TakeFinished();
}

TEST(IsolationRunnerTest, RunsEveryActionInOrderAndReportsEach) {
  char dir[] = "/tmp/titan_isolation_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string file = std::string(dir) + "/log";
  IsolationRunnerOptions o;
  o.actions.push_back(*ParseIsolationAction("exec:echo first {node} >> " + file, "titan"));
  o.actions.push_back(*ParseIsolationAction("exec:echo second {reason} >> " + file, "titan"));
  auto outcomes = RunAll(o, {Target()});
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes[0].ok) << outcomes[0].result;
  EXPECT_TRUE(outcomes[1].ok) << outcomes[1].result;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "first n2\nsecond 2 failures within 1800 s\n");
  std::remove(file.c_str());
  rmdir(dir);
}

TEST(IsolationRunnerTest, FailingHangingAndMissingActionsAreOutcomesNotStops) {
  IsolationRunnerOptions o;
  o.timeout_ns = kNsPerSecond / 2;
  o.actions.push_back(*ParseIsolationAction("exec:echo refused >&2; exit 3", "titan"));
  o.actions.push_back(*ParseIsolationAction("exec:sleep 60", "titan"));
  o.actions.push_back(*ParseIsolationAction("exec:titan-no-such-tool {node}", "titan"));
  o.actions.push_back(*ParseIsolationAction("exec:true", "titan"));
  auto outcomes = RunAll(o, {Target()});
  ASSERT_EQ(outcomes.size(), 4u);
  EXPECT_FALSE(outcomes[0].ok);
  EXPECT_EQ(outcomes[0].result, "exit code 3");
  EXPECT_EQ(outcomes[0].output, "refused\n");
  EXPECT_FALSE(outcomes[1].ok);
  EXPECT_NE(outcomes[1].result.find("timed out"), std::string::npos);
  EXPECT_FALSE(outcomes[2].ok);
  EXPECT_EQ(outcomes[2].result, "exit code 127");
  EXPECT_TRUE(outcomes[3].ok);  // the ones after still ran
}

TEST(IsolationRunnerTest, ADryRunRunsNothingAndSaysWhatWouldHaveRun) {
  char dir[] = "/tmp/titan_isolation_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string file = std::string(dir) + "/touched";
  IsolationRunnerOptions o;
  o.dry_run = true;
  o.actions.push_back(*ParseIsolationAction("exec:touch " + file, "titan"));
  o.actions.push_back(*ParseIsolationAction("slurm-drain", "titan"));
  auto outcomes = RunAll(o, {Target()});
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes[0].dry_run);
  EXPECT_EQ(outcomes[0].result, "dry run: not run");
  EXPECT_EQ(outcomes[1].command[2], "NodeName=n2");
  EXPECT_NE(access(file.c_str(), F_OK), 0) << "a dry run ran the command";
  rmdir(dir);
}

TEST(IsolationRunnerTest, WithoutActionsNothingIsQueued) {
  IsolationRunner runner(IsolationRunnerOptions{});
  EXPECT_FALSE(runner.enabled());
  runner.Submit(Target());
  EXPECT_TRUE(runner.WaitIdle(0));
  EXPECT_TRUE(runner.TakeFinished().empty());
}

}  // namespace
}  // namespace titan::cluster
