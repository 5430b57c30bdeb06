// End to end: real PyTorch (Debian's torch 1.13, CPU) under torch.distributed with gloo, two
// processes, rank 1 sleeping 150 ms (well above scheduling noise on a busy machine) before its
// gradient all-reduces; the profiler's traces are
// analysed by the library and by the CLI.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/trace/analyze.h"

namespace titan::trace {
namespace {

namespace fs = std::filesystem;

class TorchTraces : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/titan_torch_traces_XXXXXX";
    dir_ = mkdtemp(tmpl);
    if (!fs::exists("/usr/bin/python3")) return;
    int port = 20000 + getpid() % 20000;
    std::string cmd = fmt::format(
        "/usr/bin/python3 {}/src/trace/testing/gen_torch_traces.py {} --steps 3 --slow-rank 1 "
        "--slow-ms 150 --port {} > {}/gen.log 2>&1",
        TITAN_SOURCE_DIR, dir_, port, dir_);
    generated_ = std::system(cmd.c_str()) == 0;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override {
    if (!generated_) {
      std::ifstream log(dir_ + "/gen.log");
      std::stringstream ss;
      ss << log.rdbuf();
      GTEST_SKIP() << "could not run PyTorch (/usr/bin/python3 with torch and gloo): " << ss.str();
    }
  }
  static std::string dir_;
  static bool generated_;
};
std::string TorchTraces::dir_;
bool TorchTraces::generated_ = false;

TEST_F(TorchTraces, TheSlowRankIsFoundWithItsWait) {
  Result<std::vector<std::string>> files = ExpandTracePaths({dir_});
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  AnalysisResult r = AnalyzeTraces(*files, AnalyzeOptions{});
  ASSERT_TRUE(r.errors.empty()) << r.errors.front();
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[0].format, TraceFormat::kLegacyAutograd);
  EXPECT_EQ(r.ranks[0].steps.size(), 3u);
  EXPECT_GT(r.cross.matched, 0);
  ASSERT_FALSE(r.cross.stragglers.empty());
  EXPECT_EQ(r.cross.stragglers[0].rank, 1);
  // Rank 0 waits for rank 1's 150 ms sleep once per step (450 ms in all); its own compute is the
  // same as rank 1's, so most of each sleep must show as waiting.
  ASSERT_FALSE(r.cross.worst.empty());
  EXPECT_EQ(r.cross.worst[0].last_rank, 1);
  EXPECT_GE(r.cross.worst[0].skew_ns, 75'000'000);
  EXPECT_GE(r.cross.ranks[0].wait_ns, 225'000'000);  // of 450 ms slept
}

TEST_F(TorchTraces, CliPrintsJsonAndCsv) {
  std::string cli = std::string(TITAN_BINARY_DIR) + "/tools/titan/titan trace";
  std::string csv = dir_ + "/csv";
  std::string cmd = fmt::format("{} analyze {} --json --csv {} > {}/out.json 2> {}/err.txt", cli,
                                dir_ + "/rank0.json " + dir_ + "/rank1.json", csv, dir_, dir_);
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream f(dir_ + "/out.json");
  nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["ranks_analysed"], 2);
  EXPECT_EQ(j["cross_rank"]["stragglers"][0]["rank"], 1);
  EXPECT_TRUE(fs::exists(csv + "/steps.csv"));
  EXPECT_TRUE(fs::exists(csv + "/ranks.csv"));
}

}  // namespace
}  // namespace titan::trace
