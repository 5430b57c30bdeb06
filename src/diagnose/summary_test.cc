// titan diagnose of per-node summaries gives the verdict it gives for the raw logs: on a
// synthetic two-node job, and on every shared incident (each of its files summarised as if on a
// node of its own).
#include "src/diagnose/summary.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/base/json_text.h"
#include "src/diagnose/diagnose.h"
#include "src/diagnose/report.h"
#include "src/diagnose/testing/dumps.h"

namespace titan::diagnose {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// The verdict: every incident's class, action, culprit, root and confidence, in order.
std::string Verdict(const Diagnosis& d) {
  nlohmann::json v = nlohmann::json::array();
  for (const Incident& inc : d.incidents) {
    nlohmann::json j = IncidentJson(inc);
    v.push_back({j["class"], j["action"], j["culprit"], j["root"], j["confidence"], inc.escalated});
  }
  return JsonText(v);
}

// Summarises each group of files into its own summary file; returns their paths.
std::vector<std::string> Summarize(const std::vector<std::vector<std::string>>& nodes,
                                   const TempDir& out) {
  std::vector<std::string> paths;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<SourceOutput> read;
    for (const std::string& f : nodes[i]) read.push_back(ReadLogFile(f, {}));
    paths.push_back(out.Write(fmt::format("summary-{}.json", i),
                              SummaryJson(read, fmt::format("node{}", i))
                                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  }
  return paths;
}

TEST(SummaryTest, SummariesOfTwoNodesGiveTheRawVerdict) {
  TempDir logs, summaries;
  const std::string a = logs.Write(
      "node0/rank0.log",
      "2024-05-06 10:10:05 [rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
      "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n");
  std::string flood;
  for (int i = 0; i < 10'000; ++i) flood += "gpu1:7:8 [0] NCCL INFO transport/net.cc:1008 -> 6\n";
  const std::string b = logs.Write(
      "node1/dmesg.log",
      "[Mon May  6 10:00:04 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=777, name=python3, GPU "
      "has fallen off the bus.\n");
  const std::string c = logs.Write("node1/nccl.log", flood);
  auto raw = Diagnose({a, b, c}, {});
  ASSERT_TRUE(raw.ok());
  ASSERT_FALSE(raw->incidents.empty());
  auto summed = Diagnose(Summarize({{a}, {b, c}}, summaries), {});
  ASSERT_TRUE(summed.ok()) << summed.status().ToString();
  EXPECT_EQ(Verdict(*summed), Verdict(*raw));
  EXPECT_EQ(summed->incidents[0].culprit.gpu, "0000:3b:00.0");
  // The summary keeps the first symptoms of each kind, not the flood.
  const std::string text = SummaryJson({ReadLogFile(c, {})}, "node1").dump();
  EXPECT_LT(text.size(), flood.size() / 10);
  EXPECT_NE(text.find("9968 more left out"), std::string::npos);
}

TEST(SummaryTest, AMalformedSummaryIsAClearError) {
  TempDir dir;
  const std::string path = dir.Write(
      "s.json",
      R"({"titan_diagnose_summary": 1, "host": "x", "files": [], "findings": [{"rule": 3}]})");
  auto d = Diagnose({path}, {});
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->files.size(), 1u);
  EXPECT_NE(d->files[0].error.find("a finding lacks a field"), std::string::npos)
      << d->files[0].error;
  const std::string old = dir.Write("old.json", R"({"titan_diagnose_summary": 99})");
  auto o = Diagnose({old}, {});
  ASSERT_TRUE(o.ok());
  EXPECT_NE(o->files[0].error.find("summarize again"), std::string::npos) << o->files[0].error;
}

TEST(SummaryTest, SharedIncidentsGiveTheSameVerdictFromSummaries) {
  const std::string dir = std::string(TITAN_SOURCE_DIR) + "/../shared/data/logs/cases";
  if (!fs::is_directory(dir)) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL() << dir << " is missing under CI";
    GTEST_SKIP() << dir << " is missing";
  }
  int compared = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_directory()) continue;
    std::vector<std::string> files;
    for (const auto& f : fs::directory_iterator(e.path())) {
      if (f.path().filename() != "meta.json") files.push_back(f.path().string());
    }
    std::sort(files.begin(), files.end());
    auto raw = Diagnose(files, {});
    ASSERT_TRUE(raw.ok());
    TempDir out;
    std::vector<std::vector<std::string>> nodes;
    for (const std::string& f : files) nodes.push_back({f});  // each file from its own node
    auto summed = Diagnose(Summarize(nodes, out), {});
    ASSERT_TRUE(summed.ok());
    EXPECT_EQ(Verdict(*summed), Verdict(*raw)) << e.path();
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

}  // namespace
}  // namespace titan::diagnose
