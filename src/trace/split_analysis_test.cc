// The split analysis (summaries per node, then one merge) against one analysis of all files, on
// synthetic traces: every output byte for byte, and the merge's refusals.
#include "src/trace/split_analysis.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/trace/report.h"
#include "src/trace/testing/synthetic.h"
#include "src/trace/testing/temp_dir.h"

namespace titan::trace {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A 4-rank job (rank 2 late by 5 ms) on three "nodes": node0 has ranks 0 and 1 and a file that
// is not a trace, node1 rank 2, node2 rank 3. Returns every file, node by node.
std::vector<std::vector<std::string>> WriteNodes(const TempDir& dir) {
  std::vector<std::vector<std::string>> nodes(3);
  const int node_of[] = {0, 0, 1, 2};
  for (int r = 0; r < 4; ++r) {
    testing::SyntheticOptions o;
    o.rank = r;
    o.step_us = 12'000;
    o.late_us = r == 2 ? 5000 : 0;
    o.max_late_us = 5000;
    o.pretty = r % 2 == 1;
    nodes[node_of[r]].push_back(
        dir.Write(fmt::format("node{}_rank{}.json", node_of[r], r), testing::KinetoTrace(o)));
  }
  nodes[0].push_back(dir.Write("node0_zz_notes.json", "not a trace"));
  return nodes;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Every output of `r`, its elapsed time zeroed (the one field that is not a result).
std::string AllOutputs(AnalysisResult r, bool hta, const std::string& csv_dir) {
  r.seconds = 0;
  EXPECT_TRUE(WriteCsvReport(r, hta, csv_dir).ok());
  std::string csv;
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(csv_dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& p : files) csv += "== " + p.filename().string() + "\n" + ReadAll(p);
  return JsonReport(r, hta) + "\n" + TextReport(r, {.hta_compat = hta}) +
         TextReport(r, {.hta_compat = hta, .full = true}) + csv;
}

class SplitAnalysis : public ::testing::Test {
 protected:
  void SetUp() override {
    nodes_ = WriteNodes(dir_);
    for (const auto& node : nodes_) all_.insert(all_.end(), node.begin(), node.end());
  }
  // Summarises each node into <dir>/summary<i>.json; returns the paths.
  std::vector<std::string> Summarise(const AnalyzeOptions& options, const std::string& job = "42") {
    std::vector<std::string> paths;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      NodeSummary node = SummarizeTraces(nodes_[i], options, job, fmt::format("host{}", i));
      paths.push_back(fmt::format("{}/summary{}.json", dir_.path(), i));
      EXPECT_TRUE(WriteSummaryFile(paths.back(), node).ok());
    }
    return paths;
  }
  // The merge's error, the temporary directory written as DIR.
  std::string Error(const std::vector<std::string>& summaries, const MergeOptions& options = {}) {
    Result<AnalysisResult> r = AnalyzeSummaries(summaries, options);
    std::string error = r.ok() ? "OK" : r.status().ToString();
    for (size_t at; (at = error.find(dir_.path())) != std::string::npos;) {
      error.replace(at, dir_.path().size(), "DIR");
    }
    return error;
  }

  TempDir dir_;
  std::vector<std::vector<std::string>> nodes_;
  std::vector<std::string> all_;
};

TEST_F(SplitAnalysis, SameOutputsAsOneAnalysisOfAllFiles) {
  for (bool hta : {false, true}) {
    AnalyzeOptions options;
    options.hta_compat = hta;
    options.summary.top_gaps = 3;
    AnalysisResult whole = AnalyzeTraces(all_, options);
    ASSERT_EQ(whole.ranks.size(), 4u);
    ASSERT_EQ(whole.errors.size(), 1u);  // the text file, reported in both
    ASSERT_FALSE(whole.cross.stragglers.empty());
    MergeOptions merge;
    merge.hta_compat = hta;
    Result<AnalysisResult> split = AnalyzeSummaries(Summarise(options), merge);
    ASSERT_TRUE(split.ok()) << split.status().ToString();
    fs::create_directories(dir_.path() + "/csv_whole");
    fs::create_directories(dir_.path() + "/csv_split");
    const std::string expected = AllOutputs(whole, hta, dir_.path() + "/csv_whole");
    EXPECT_EQ(AllOutputs(*split, hta, dir_.path() + "/csv_split"), expected) << "hta " << hta;
    EXPECT_NE(expected.find("stragglers:\n  rank 2:"), std::string::npos) << expected;
  }
}

TEST_F(SplitAnalysis, AMergeThatLosesCollectivesIsNoticed) {
  // The comparison above must be able to fail: a node summary without its collectives gives
  // another result.
  AnalyzeOptions options;
  AnalysisResult whole = AnalyzeTraces(all_, options);
  std::vector<std::string> summaries = Summarise(options);
  Result<NodeSummary> node1 = ReadSummaryFile(summaries[1]);
  ASSERT_TRUE(node1.ok());
  node1->ranks[0].collectives.clear();
  ASSERT_TRUE(WriteSummaryFile(summaries[1], *node1).ok());
  Result<AnalysisResult> split = AnalyzeSummaries(summaries, {});
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  fs::create_directories(dir_.path() + "/a");
  fs::create_directories(dir_.path() + "/b");
  EXPECT_NE(AllOutputs(*split, false, dir_.path() + "/b"),
            AllOutputs(whole, false, dir_.path() + "/a"));
  EXPECT_TRUE(split->cross.stragglers.empty());  // rank 2 was the straggler
}

TEST_F(SplitAnalysis, ARankInTwoSummariesIsRefusedNamingBoth) {
  std::vector<std::string> s = Summarise({});
  fs::copy_file(s[1], dir_.path() + "/copy.json");
  EXPECT_EQ(Error({s[0], s[1], s[2], dir_.path() + "/copy.json"}),
            "ALREADY_EXISTS: rank 2 is in two summaries: DIR/summary1.json (host "
            "host1) (trace DIR/node1_rank2.json) and DIR/copy.json (host host1) "
            "(trace DIR/node1_rank2.json); each rank must be summarised on one node "
            "only: remove the stale summary or summarize that node again");
}

TEST_F(SplitAnalysis, SummariesOfDifferentJobsAreRefused) {
  std::vector<std::string> s = Summarise({}, "42");
  NodeSummary other = SummarizeTraces(nodes_[2], {}, "43", "hostx");
  ASSERT_TRUE(WriteSummaryFile(s[2], other).ok());
  EXPECT_EQ(Error(s),
            "INVALID_ARGUMENT: DIR/summary0.json (host host0) is job '42' but "
            "DIR/summary2.json (host hostx) is job '43': these are summaries of "
            "different jobs; analyze one job's summaries together (summarize sets "
            "the job id from --job, else $SLURM_JOB_ID)");

  // Same job id, but a rank from an 8-rank job.
  testing::SyntheticOptions o;
  o.rank = 3;
  o.world_size = 8;
  other = SummarizeTraces({dir_.Write("big_rank3.json", testing::KinetoTrace(o))}, {}, "42", "h");
  ASSERT_TRUE(WriteSummaryFile(s[2], other).ok());
  EXPECT_EQ(Error(s),
            "INVALID_ARGUMENT: rank 0 in DIR/summary0.json (host host0) has "
            "world size 4 but rank 3 in DIR/summary2.json (host h) has "
            "world size 8: these are summaries of different jobs; analyze "
            "one job's summaries together");
}

TEST_F(SplitAnalysis, OptionsMustMatchTheSummaries) {
  std::vector<std::string> s = Summarise({});
  MergeOptions want;
  want.hta_compat = true;
  EXPECT_EQ(Error(s, want),
            "INVALID_ARGUMENT: DIR/summary0.json has no HTA-compatible results: run "
            "titan trace summarize with --hta-compat");
  want = {};
  want.top_gaps = 8;
  EXPECT_EQ(Error(s, want),
            "INVALID_ARGUMENT: DIR/summary0.json keeps the top 5 idle gaps per rank, "
            "not 8: pass --top 8 to titan trace summarize, or leave --top out when "
            "analyzing summaries");
  AnalyzeOptions top2;
  top2.summary.top_gaps = 2;
  ASSERT_TRUE(WriteSummaryFile(s[1], SummarizeTraces(nodes_[1], top2, "42", "host1")).ok());
  EXPECT_EQ(Error(s),
            "INVALID_ARGUMENT: DIR/summary0.json and DIR/summary1.json were "
            "summarised with different options (--top 5 vs 2, --hta-compat "
            "false vs false, --hta-kernel-delay-us 30 vs 30): summarize "
            "every node with the same options");
}

TEST_F(SplitAnalysis, UnreadableSummariesAreAllNamed) {
  std::vector<std::string> s = Summarise({});
  std::string text = ReadAll(s[0]);
  std::ofstream(s[0]) << text.replace(text.find("\"version\":1"), 11, "\"version\":9");
  std::ofstream(s[2]) << "{}";
  EXPECT_EQ(Error(s),
            "INVALID_ARGUMENT: 2 of 3 summaries cannot be used:\n  DIR/summary0.json: "
            "summary format version 9, but this titan reads version 1: summarize and "
            "analyze with the same titan release (re-run titan trace summarize on "
            "that node)\n  DIR/summary2.json: not a titan trace summary (kind: "
            "missing): write it again with titan trace summarize");
}

// Issue 37: a summary that claims an impossible world size is refused, and ranks that no
// summary holds are named instead of analysing a partial job without a word. (On the code
// before, world sizes 0 and 10^9 were read, and a merge of 2 of 3 nodes reported nothing.)
TEST_F(SplitAnalysis, ImpossibleWorldSizesAreRefusedAndMissingRanksNamed) {
  std::vector<std::string> s = Summarise({});
  const std::string text = ReadAll(s[1]);  // rank 2, "world_size":4
  ASSERT_NE(text.find("\"world_size\":4"), std::string::npos);
  for (const auto& [claim, why] : std::vector<std::pair<std::string, std::string>>{
           {"0", "world size 0 is impossible"},
           {"1000000000", "1000000000 is outside [-1, 1048576]"},
           {"2", "rank 2 cannot be in a world of 2 ranks"}}) {
    std::string bad = text;
    bad.replace(bad.find("\"world_size\":4"), 14, "\"world_size\":" + claim);
    std::ofstream(s[1]) << bad;
    std::string error = Error(s);
    EXPECT_NE(error.find("DIR/summary1.json"), std::string::npos) << error;
    EXPECT_NE(error.find("ranks[0].world_size: " + why), std::string::npos) << error;
  }
  std::ofstream(s[1]) << text;

  Result<AnalysisResult> partial = AnalyzeSummaries({s[0], s[2]}, {});
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  for (const std::string& e : partial->errors) EXPECT_EQ(e.find("in none of"), std::string::npos);
  ASSERT_EQ(partial->warnings.size(), 1u);
  EXPECT_EQ(partial->warnings.back(),
            "rank 2 of world size 4 is in none of the 2 files analysed: the results cover the "
            "ranks analysed only; analyze every rank's trace (or every node's summary) together "
            "to see them all");
  Result<AnalysisResult> only_first = AnalyzeSummaries({s[0]}, {});
  ASSERT_TRUE(only_first.ok());
  ASSERT_FALSE(only_first->warnings.empty());
  EXPECT_EQ(
      only_first->warnings.back().rfind("ranks 2-3 of world size 4 (2) are in none of the 1 ", 0),
      0u)
      << only_first->warnings.back();
  Result<AnalysisResult> whole = AnalyzeSummaries(s, {});
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(whole->warnings.empty());
}

}  // namespace
}  // namespace titan::trace
