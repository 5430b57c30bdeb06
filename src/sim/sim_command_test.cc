// Runs the real `titan sim` as a process (the titan binary) and checks exit codes and
// output: what a user sees.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test/support/subprocess.h"

namespace {

using Output = titan::testing::ShellResult;

Output RunCli(const std::string& args) {
  return titan::testing::RunShell(std::string(TITAN_BINARY_DIR) + "/tools/titan/titan sim " + args);
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SimCommandTest, PresetTableAndJson) {
  Output table = RunCli("daly --replicas 20");
  EXPECT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("daly 116.7 min"), std::string::npos) << table.out;

  Output json = RunCli("daly --replicas 20 --json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  const nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["replicas"], 20);
  EXPECT_NEAR(parsed["young_minutes"].get<double>(), 120, 0.01);
}

TEST(SimCommandTest, YamlFileWithSetAndSweepToCsv) {
  const std::string path = WriteFile("sim_cli.yaml", R"(
base: llama3-16k
run: {duration_days: 3, replicas: 4}
)");
  Output csv = RunCli(path + " --set cluster.repair_hours=12 --sweep spares=0,16 --csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.out;
  EXPECT_NE(csv.out.find(",spares,0,16384,2048,0,4,"), std::string::npos) << csv.out;
  EXPECT_NE(csv.out.find(",spares,16,16384,2048,16,4,"), std::string::npos) << csv.out;
}

TEST(SimCommandTest, BadInputExitsTwoNamingTheKey) {
  const std::string path = WriteFile("sim_bad.yaml", R"(
base: daly
checkpoint: {mode: sync, write_seconds: 300, interval: fixed, interval_minutes: 2}
)");
  Output bad = RunCli(path);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("checkpoint.interval_minutes"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("allowed: > 5"), std::string::npos) << bad.out;

  Output unknown = RunCli("daly --set recovery.restart_minutes=3");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.out.find("recovery.restart_minutes: unknown key"), std::string::npos)
      << unknown.out;

  Output missing = RunCli("no-such-preset");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("llama3-16k"), std::string::npos) << missing.out;

  Output sweep = RunCli("daly --sweep gpus=8,-8");
  EXPECT_EQ(sweep.exit_code, 2);
  EXPECT_NE(sweep.out.find("--sweep gpus"), std::string::npos) << sweep.out;
}

TEST(SimCommandTest, ShowPrintsAPresetThatRunsAsAFile) {
  Output show = RunCli("--show daly");
  ASSERT_EQ(show.exit_code, 0);
  const std::string path = WriteFile("sim_shown.yaml", show.out);
  Output run = RunCli(path + " --replicas 5 --csv");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("\"daly\""), std::string::npos) << run.out;
}

}  // namespace
