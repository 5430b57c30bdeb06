#include "src/trace/summary_file.h"

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/trace/analyses/cross_rank.h"
#include "src/trace/split_analysis.h"
#include "src/trace/testing/synthetic.h"
#include "src/trace/testing/temp_dir.h"

namespace titan::trace {
namespace {

using testing::TempDir;

// A node with two synthetic ranks (rank 1 late), HTA results included.
NodeSummary TwoRankNode(const TempDir& dir) {
  std::vector<std::string> files;
  for (int r = 0; r < 2; ++r) {
    testing::SyntheticOptions o;
    o.rank = r;
    o.late_us = r == 1 ? 3000 : 0;
    o.max_late_us = 3000;
    files.push_back(dir.Write(fmt::format("rank{}.json", r), testing::KinetoTrace(o)));
  }
  AnalyzeOptions options;
  options.hta_compat = true;
  return SummarizeTraces(files, options, "job-7", "node-a");
}

TEST(SummaryFile, RoundTripsEveryField) {
  TempDir dir;
  NodeSummary node = TwoRankNode(dir);
  ASSERT_EQ(node.ranks.size(), 2u);
  ASSERT_EQ(node.hta.size(), 2u);
  ASSERT_FALSE(node.ranks[1].collectives.empty());
  // Values at the edges of their range survive: times at +-kMaxTraceTimeNs in a collective (the
  // start is stored as a difference to the previous start: 2^63 - 2 between these two), a
  // duration of -kMaxTraceTimeNs, and NaN/inf doubles.
  CollectiveCall extreme = node.ranks[1].collectives.back();
  extreme.ordinal++;  // the next call of its group
  extreme.start_ns = -kMaxTraceTimeNs;
  extreme.end_ns = 0;
  node.ranks[1].collectives.push_back(extreme);
  extreme.ordinal++;
  extreme.start_ns = kMaxTraceTimeNs;
  extreme.end_ns = 0;
  node.ranks[1].collectives.push_back(extreme);
  node.hta[0].comm_comp_overlap_pct = std::numeric_limits<double>::quiet_NaN();
  node.hta[1].idle_pct = std::numeric_limits<double>::infinity();
  node.hta[1].compute_pct = 0.1 + 0.2;  // needs all 17 digits
  node.hta[0].integer_times = !node.hta[0].integer_times;

  const std::string encoded = EncodeSummary(node);
  Result<NodeSummary> decoded = DecodeSummary(encoded, "node.json");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(EncodeSummary(*decoded), encoded);
  EXPECT_EQ(decoded->job, "job-7");
  EXPECT_EQ(decoded->host, "node-a");
  EXPECT_TRUE(decoded->options == node.options);
  ASSERT_EQ(decoded->ranks.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    const RankSummary& a = node.ranks[r];
    const RankSummary& b = decoded->ranks[r];
    EXPECT_EQ(b.rank, a.rank);
    EXPECT_EQ(b.world_size, 4);
    EXPECT_EQ(b.path, a.path);
    EXPECT_EQ(b.steps.size(), a.steps.size());
    EXPECT_EQ(b.total.idle_ns, a.total.idle_ns);
    EXPECT_EQ(b.verdict, a.verdict);
    ASSERT_EQ(b.collectives.size(), a.collectives.size());
    for (size_t i = 0; i < a.collectives.size(); ++i) {
      EXPECT_EQ(b.collectives[i].start_ns, a.collectives[i].start_ns) << i;
      EXPECT_EQ(b.collectives[i].end_ns, a.collectives[i].end_ns) << i;
      EXPECT_EQ(b.collectives[i].ordinal, a.collectives[i].ordinal) << i;
      EXPECT_EQ(b.collectives[i].seq, a.collectives[i].seq) << i;
      EXPECT_EQ(b.collectives[i].process_group, a.collectives[i].process_group) << i;
    }
  }
  EXPECT_TRUE(std::isnan(decoded->hta[0].comm_comp_overlap_pct));
  EXPECT_TRUE(std::isinf(decoded->hta[1].idle_pct));
  EXPECT_EQ(decoded->hta[1].compute_pct, 0.1 + 0.2);
  EXPECT_EQ(decoded->hta[0].integer_times, node.hta[0].integer_times);
  EXPECT_EQ(decoded->hta[1].integer_times, node.hta[1].integer_times);
  EXPECT_EQ(decoded->hta[1].kernels.size(), node.hta[1].kernels.size());
}

TEST(SummaryFile, WritesAtomicallyAndIsRecognisedByItsFirstBytes) {
  TempDir dir;
  NodeSummary node = TwoRankNode(dir);
  const std::string path = dir.path() + "/node.summary.json";
  ASSERT_TRUE(WriteSummaryFile(path, node).ok());
  EXPECT_TRUE(LooksLikeSummaryFile(path));
  EXPECT_FALSE(LooksLikeSummaryFile(dir.path() + "/rank0.json"));  // a Kineto trace
  EXPECT_FALSE(LooksLikeSummaryFile(dir.path() + "/missing.json"));
  EXPECT_TRUE(LooksLikeSummaryFile(
      dir.Write("spaced.json", "\n { \"kind\" :\"" + std::string(kSummaryKind) + "\"}")));
  Result<NodeSummary> read = ReadSummaryFile(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(EncodeSummary(*read), EncodeSummary(node));
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    files += entry.path().filename().string().starts_with("node.summary.json") ? 1 : 0;
  }
  EXPECT_EQ(files, 1);
}

// The decoding error for `doc` after `edit`.
std::string ErrorAfter(const std::function<void(nlohmann::json&)>& edit) {
  TempDir dir;
  nlohmann::json doc = nlohmann::json::parse(EncodeSummary(TwoRankNode(dir)));
  edit(doc);
  Result<NodeSummary> r = DecodeSummary(doc.dump(), "n1.json");
  return r.ok() ? "OK" : r.status().ToString();
}

TEST(SummaryFile, BadDocumentsAreRefusedWithThePlace) {
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) { d["version"] = 2; }),
            "FAILED_PRECONDITION: n1.json: summary format version 2, but this titan reads version "
            "1: summarize and analyze with the same titan release (re-run titan trace summarize "
            "on that node)");
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) { d["kind"] = "kineto"; }),
            "INVALID_ARGUMENT: n1.json: not a titan trace summary (kind: is \"kineto\", not "
            "\"titan-trace-summary\"): write it again with titan trace summarize");
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) { d["ranks"][1].erase("steps"); }),
            "INVALID_ARGUMENT: n1.json: not a titan trace summary (ranks[1].steps: missing): "
            "write it again with titan trace summarize");
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) { d["ranks"][0]["steps"][2][3] = "x"; }),
            "INVALID_ARGUMENT: n1.json: not a titan trace summary (ranks[0].steps[2][3]: expected "
            "an integer): write it again with titan trace summarize");
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) { d["ranks"][1]["collectives"][0][0] = 5; }),
            "INVALID_ARGUMENT: n1.json: not a titan trace summary (ranks[1].collectives[0][0]: 5 "
            "is outside [0, 0]): write it again with titan trace summarize");
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) { d["ranks"][1]["rank"] = 0; }),
            "INVALID_ARGUMENT: n1.json: not a titan trace summary (ranks[1]: rank 0 after rank "
            "0: ranks must be listed once each, in increasing order): write it again with titan "
            "trace summarize");
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) { d["hta"].erase(size_t{1}); }),
            "INVALID_ARGUMENT: n1.json: not a titan trace summary (hta: has 1 entries for 2 ranks "
            "with hta_compat true): write it again with titan trace summarize");
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) { d["ranks"][0]["input_bytes"] = -1; }),
            "INVALID_ARGUMENT: n1.json: not a titan trace summary (ranks[0].input_bytes: expected "
            "a non-negative integer): write it again with titan trace summarize");
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) { d = nlohmann::json::array(); }),
            "INVALID_ARGUMENT: n1.json: not a titan trace summary (the document: expected an "
            "object): write it again with titan trace summarize");
}

// Hand-edited times past kMaxTraceTimeNs, or parts of a step longer than the step, are refused
// (they overflowed the cross-rank analysis), and times at the bound are analysed without it.
TEST(SummaryFile, AbsurdTimesAreRefusedAndTimesAtTheBoundDoNotOverflow) {
  const int64_t past = kMaxTraceTimeNs + 1;
  auto refused = [](std::string_view place, std::string_view why) {
    return fmt::format(
        "INVALID_ARGUMENT: n1.json: not a titan trace summary ({}: {}): write it again with "
        "titan trace summarize",
        place, why);
  };
  EXPECT_EQ(ErrorAfter([&](nlohmann::json& d) { d["ranks"][0]["steps"][1][3] = past; }),
            refused("ranks[0].steps[1][3]",
                    "4611686018427387904 ns is outside +-2^62 ns (146 years): not a time from a "
                    "trace"));
  int64_t wall = 0;
  const std::string more_compute_than_wall = ErrorAfter([&](nlohmann::json& d) {
    auto& step = d["ranks"][0]["steps"][1];
    wall = step[3].get<int64_t>() - step[2].get<int64_t>();
    step[4] = wall + 1;
  });
  EXPECT_EQ(more_compute_than_wall,
            refused("ranks[0].steps[1][4]", fmt::format("{} is outside [0, {}]", wall + 1, wall)));
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) {
              auto& step = d["ranks"][0]["steps"][1];
              step[3] = step[2].get<int64_t>() - 1;
            }),
            refused("ranks[0].steps[1][3]", "the step ends before it begins"));
  EXPECT_EQ(ErrorAfter([&](nlohmann::json& d) { d["ranks"][1]["epoch_offset_ns"] = -past; }),
            refused("ranks[1].epoch_offset_ns",
                    "-4611686018427387904 ns is outside +-2^62 ns (146 years): not a time from a "
                    "trace"));
  EXPECT_EQ(ErrorAfter([&](nlohmann::json& d) { d["ranks"][1]["collectives"][0][2] = past; }),
            refused("ranks[1].collectives[0][2]",
                    "4611686018427387904 ns is outside +-2^62 ns (146 years): not a time from a "
                    "trace"));
  EXPECT_EQ(ErrorAfter([](nlohmann::json& d) { d["ranks"][1]["dataloader_ns"] = -1; }),
            refused("ranks[1].dataloader_ns", "-1 is outside [0, 9223372036854775807]"));

  // Times at opposite ends of the range on two ranks without a shared clock: every call but the
  // last gives rank 1 a clock offset of about 2^63, and its last call, moved by it, leaves int64,
  // as do the waits and their sums. They saturate (the ASan+UBSan run of this test aborts on a
  // signed overflow; the release run saw waits wrap negative).
  TempDir dir;
  NodeSummary node = TwoRankNode(dir);
  for (RankSummary& r : node.ranks) r.wall_clock = false;
  for (CollectiveCall& c : node.ranks[0].collectives) {
    c.start_ns = kMaxTraceTimeNs - 1;
    c.end_ns = kMaxTraceTimeNs;
  }
  for (CollectiveCall& c : node.ranks[1].collectives) {
    const bool last = &c == &node.ranks[1].collectives.back();
    c.start_ns = last ? kMaxTraceTimeNs - 1 : -kMaxTraceTimeNs;
    c.end_ns = c.start_ns + 1;
  }
  Result<NodeSummary> read = DecodeSummary(EncodeSummary(node), "bound.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  CrossRankResult cross = AnalyseAcrossRanks(read->ranks, 5);
  for (const RankWaits& w : cross.ranks) {
    EXPECT_GE(w.wait_ns, 0) << "rank " << w.rank;
    EXPECT_GE(w.cost_ns, 0) << "rank " << w.rank;
  }
  for (const MatchedCollective& c : cross.worst) EXPECT_GE(c.skew_ns, 0);
}

TEST(SummaryFile, MalformedAndDeepJsonAreRefusedBeforeParsing) {
  Result<NodeSummary> r = DecodeSummary("{\"kind\": \"titan-trace-summary\", ", "cut.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "cut.json: not a titan trace summary (malformed JSON): write it again with titan "
            "trace summarize");
  std::string deep = "{\"kind\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  r = DecodeSummary(deep, "deep.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("deep.json: JSON nested deeper than 128 levels"),
            std::string_view::npos)
      << r.status().message();
}

}  // namespace
}  // namespace titan::trace
