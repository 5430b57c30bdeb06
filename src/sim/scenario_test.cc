#include "src/sim/scenario.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/sim/failure_model.h"
#include "src/sim/presets.h"
#include "src/sim/scenario_text.h"

namespace titan::sim {
namespace {

using nlohmann::json;

constexpr char kMinimal[] = R"(
cluster: {gpus: 64, gpus_per_node: 8, spares: 2}
failures:
  causes:
    - {name: gpu, per_1000_node_days: 5}
job: {compute_seconds: 2}
checkpoint: {mode: sync, write_seconds: 60}
run: {duration_days: 10, replicas: 4}
)";

Result<Scenario> ParseText(const std::string& text) {
  TITAN_ASSIGN_OR_RETURN(json tree, ParseScenarioText(text, "test.yaml"));
  return ParseScenario(tree);
}

// Parses kMinimal with `key` (dotted) set to `value`; returns the error message ("" if OK).
std::string ErrorWith(const std::string& key, const std::string& value) {
  Result<json> tree = ParseScenarioText(kMinimal, "test.yaml");
  EXPECT_TRUE(tree.ok());
  EXPECT_TRUE(SetTreePath(&*tree, key, value).ok());
  Result<Scenario> s = ParseScenario(*tree);
  return s.ok() ? "" : std::string(s.status().message());
}

TEST(ScenarioTest, MinimalYamlGetsDefaults) {
  Result<Scenario> s = ParseText(kMinimal);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->cluster.nodes(), 8);
  EXPECT_EQ(s->cluster.spares, 2);
  ASSERT_EQ(s->causes.size(), 1u);
  EXPECT_NEAR(s->causes[0].per_node_second * 86400 * 1000, 5, 1e-9);
  EXPECT_EQ(s->checkpoint.interval, IntervalPolicy::kDaly);
  EXPECT_EQ(s->recovery.policy, RecoveryPolicy::kSpares);
  EXPECT_EQ(s->run.duration_seconds, 10 * 86400);
  EXPECT_EQ(s->job.reference_gpus, 64);
}

// Issue 15 #18: a second `cluster:` silently replaced the first.
TEST(ScenarioTest, ADuplicateKeyIsAnErrorNotTheLastCopy) {
  Result<json> tree =
      ParseScenarioText("cluster:\n  gpus: 1024\njob: {}\ncluster:\n  gpus: 16\n", "dup.yaml");
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.status().message().find("dup.yaml: line 4: key 'cluster' given twice"),
            std::string::npos)
      << tree.status().message();
}

TEST(ScenarioTest, JsonAndYamlGiveTheSameScenario) {
  Result<json> yaml = ParseScenarioText(kMinimal, "a.yaml");
  ASSERT_TRUE(yaml.ok());
  Result<json> from_json = ParseScenarioText(yaml->dump(), "a.json");
  ASSERT_TRUE(from_json.ok()) << from_json.status().ToString();
  EXPECT_EQ(*yaml, *from_json);
}

TEST(ScenarioTest, EveryPresetParses) {
  for (const char* name : {"llama3-16k", "meta-rsc", "daly"}) {
    Result<json> tree = LoadScenarioTree(name);
    ASSERT_TRUE(tree.ok()) << name << ": " << tree.status().ToString();
    Result<Scenario> s = ParseScenario(*tree);
    EXPECT_TRUE(s.ok()) << name << ": " << s.status().ToString();
  }
}

// Source: Llama 3 report, table 5: 419 interruptions, 2,048 nodes, 54 days.
TEST(ScenarioTest, Llama3TableUsesTheCountsNotThePercentages) {
  int total = 0;
  for (const TableEntry& entry : Llama3Table()) total += entry.count;
  EXPECT_EQ(total, 419);
  Result<Scenario> s = ParseScenario(*LoadScenarioTree("llama3-16k"));
  ASSERT_TRUE(s.ok());
  EXPECT_NEAR(NodeFailureRate(s->causes) * 2048 * 54 * 86400, 419, 1e-6);
}

TEST(ScenarioTest, BaseMergesAPresetWithOverrides) {
  Result<Scenario> s = ParseText("base: llama3-16k\ncluster: {spares: 7}\nrun: {replicas: 3}\n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->cluster.spares, 7);
  EXPECT_EQ(s->cluster.gpus, 16384);
  EXPECT_EQ(s->run.replicas, 3);
  EXPECT_EQ(s->checkpoint.mode, CheckpointMode::kAsync);
}

TEST(ScenarioTest, UnknownKeysAreNamedWithTheAllowedOnes) {
  const std::string message = ErrorWith("checkpoint.intervall", "daly");
  EXPECT_NE(message.find("checkpoint.intervall"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown key"), std::string::npos) << message;
  EXPECT_NE(message.find("interval_minutes"), std::string::npos) << message;
  EXPECT_NE(ErrorWith("clusters.gpus", "8").find("clusters"), std::string::npos);
}

TEST(ScenarioTest, NegativeOrZeroRatesAreRefusedWithTheRange) {
  Result<Scenario> s = ParseText(R"(
cluster: {gpus: 8}
failures: {causes: [{name: x, per_1000_node_days: -1}]}
job: {compute_seconds: 1}
checkpoint: {write_seconds: 1}
run: {duration_days: 1}
)");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("failures.causes[0].per_1000_node_days"), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("(0, "), std::string::npos) << s.status().message();
  EXPECT_NE(ErrorWith("failures.scale", "0").find("failures.scale"), std::string::npos);
  EXPECT_NE(ErrorWith("job.compute_seconds", "-3").find("job.compute_seconds"), std::string::npos);
  EXPECT_NE(ErrorWith("cluster.repair_hours", "0").find("cluster.repair_hours"), std::string::npos);
}

TEST(ScenarioTest, ImpossibleCombinationsAreRefused) {
  std::string message = ErrorWith("cluster.spares", "9");  // 8 nodes
  EXPECT_NE(message.find("cluster.spares"), std::string::npos) << message;
  EXPECT_NE(message.find("[0, 8]"), std::string::npos) << message;

  message = ErrorWith("checkpoint.interval_minutes", "0.5");  // stall is 1 min
  EXPECT_NE(message.find("checkpoint.interval_minutes"), std::string::npos) << message;
  EXPECT_NE(message.find("> 1"), std::string::npos) << message;

  message = ErrorWith("recovery.policy", "wait");  // with 2 spares
  EXPECT_NE(message.find("cluster.spares"), std::string::npos) << message;

  message = ErrorWith("checkpoint.blocking_seconds", "5");  // mode is sync
  EXPECT_NE(message.find("only used with mode: async"), std::string::npos) << message;

  message = ErrorWith("job.tensor_parallel", "3");
  EXPECT_NE(message.find("divide"), std::string::npos) << message;

  message = ErrorWith("job.steps", "1000");  // and run.duration_days
  EXPECT_NE(message.find("not both"), std::string::npos) << message;
}

TEST(ScenarioTest, NonNumbersNanAndInfinityAreRefused) {
  for (const char* bad : {".nan", ".inf", "nan", "lots", "true"}) {
    const std::string message = ErrorWith("job.compute_seconds", bad);
    EXPECT_NE(message.find("must be a number"), std::string::npos) << bad << ": " << message;
  }
  // Invalid UTF-8 in a value is quoted in the message, not a crash (found by the fuzzer).
  EXPECT_NE(ErrorWith("job.pipeline_parallel",
                      "\xff"
                      "16")
                .find("job.pipeline_parallel"),
            std::string::npos);
  const std::string message = ErrorWith("run.replicas", "2.5");
  EXPECT_NE(message.find("whole number"), std::string::npos) << message;
}

TEST(ScenarioTest, MissingRequiredKeysAreNamed) {
  Result<Scenario> s = ParseText("cluster: {gpus: 8}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("failures"), std::string::npos) << s.status().message();
  s = ParseText("failures: {table: llama3}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cluster.gpus"), std::string::npos);
  s = ParseText("cluster: {gpus: 8}\nfailures: {table: llama4}\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("llama3"), std::string::npos) << s.status().message();
}

TEST(ScenarioTest, AbsurdFailureCountsAreRefusedNotSimulated) {
  const std::string message = ErrorWith("failures.causes", "x");
  EXPECT_NE(message.find("failures.causes"), std::string::npos);
  Result<Scenario> s = ParseText(R"(
cluster: {gpus: 8000000, gpus_per_node: 8}
failures: {causes: [{name: x, mtbf_node_hours: 0.001}]}
job: {compute_seconds: 1}
checkpoint: {write_seconds: 1}
run: {duration_days: 3000}
)");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("failures expected per replica"), std::string::npos)
      << s.status().message();
  s = ParseText(R"(
cluster: {gpus: 10000000, gpus_per_node: 1}
failures: {table: llama3, distribution: weibull, weibull_shape: 0.8}
job: {compute_seconds: 1}
checkpoint: {write_seconds: 1}
run: {duration_days: 1}
)");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("failure clocks"), std::string::npos) << s.status().message();
}

TEST(ScenarioTextTest, SyntaxErrorsNameTheLine) {
  Result<json> tree = ParseScenarioText("cluster:\n  gpus: [1, 2\n", "bad.yaml");
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.status().message().find("bad.yaml: not valid YAML at line"), std::string::npos)
      << tree.status().message();
  tree = ParseScenarioText("{\"cluster\": }", "bad.json");
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.status().message().find("bad.json"), std::string::npos);
  EXPECT_FALSE(ParseScenarioText("- a\n- b\n", "list.yaml").ok());
}

TEST(ScenarioTextTest, DeepNestingAndAliasBombsAreBounded) {
  EXPECT_FALSE(ParseScenarioText(std::string(100, '[') + std::string(100, ']'), "deep").ok());
  EXPECT_FALSE(
      ParseScenarioText("{" + std::string(100, '[') + std::string(100, ']') + "}", "deep").ok());
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    bomb += fmt::format("{}: &{} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n", c,
                        c, fmt::arg("p", std::string(1, c - 1)));
  }
  Result<json> tree = ParseScenarioText(bomb, "bomb.yaml");
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.status().message().find("nodes"), std::string::npos) << tree.status().message();
}

TEST(ScenarioTextTest, SetTreePathReadsScalars) {
  json tree = json::object();
  ASSERT_TRUE(SetTreePath(&tree, "a.b", "12").ok());
  ASSERT_TRUE(SetTreePath(&tree, "a.c", "1.5").ok());
  ASSERT_TRUE(SetTreePath(&tree, "a.d", "sync").ok());
  EXPECT_EQ(tree["a"]["b"], 12);
  EXPECT_EQ(tree["a"]["c"], 1.5);
  EXPECT_EQ(tree["a"]["d"], "sync");
  EXPECT_FALSE(SetTreePath(&tree, "a.b.c", "1").ok());  // a.b is a number
  EXPECT_FALSE(SetTreePath(&tree, "a..c", "1").ok());
  tree["list"] = json::array({json::object()});
  ASSERT_TRUE(SetTreePath(&tree, "list.0.x", "3").ok());
  EXPECT_EQ(tree["list"][0]["x"], 3);
  EXPECT_FALSE(SetTreePath(&tree, "list.1.x", "3").ok());
}

TEST(ScenarioTextTest, UnknownPresetOrMissingFileSaysWhatExists) {
  Result<json> tree = LoadScenarioTree("/nonexistent/x.yaml");
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.status().message().find("llama3-16k"), std::string::npos);
}

// A FIFO made the load block in open() forever; /dev/zero was read as a scenario.
TEST(ScenarioTextTest, AFifoOrADeviceIsRefusedNotOpened) {
  std::string fifo = ::testing::TempDir() + "/titan_scenario_fifo.yaml";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Result<json> tree = LoadScenarioTree(fifo);
  ::unlink(fifo.c_str());
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.status().message().find("not a regular file (a FIFO"), std::string::npos)
      << tree.status().ToString();
  Result<json> zero = LoadScenarioTree("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("/dev/zero is not a regular file"), std::string::npos)
      << zero.status().ToString();
}

}  // namespace
}  // namespace titan::sim
