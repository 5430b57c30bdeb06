// The text report at scale: a synthetic 1,000-rank result stays a screenful that names the
// outlier ranks, --full prints every row, and few ranks keep their per-rank tables; the CSVs
// are written checked.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/trace/report.h"

namespace titan::trace {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int kSteps = 5;
constexpr int kGapsPerRank = 5;
constexpr int kSlowRank = 617;  // 3x the others' step time; last at every collective
constexpr int kIdleRank = 42;   // the most idle: 90% of its steps

// `ranks` ranks of kSteps 100 ms steps (rank r's compute 50 + r % 7 ms), with kGapsPerRank idle
// gaps each, collectives that every other rank waits at for kSlowRank, and HTA tables.
AnalysisResult Synthetic(int ranks) {
  AnalysisResult r;
  r.cross.clock = "wall clock (Kineto timestamps)";
  r.cross.steps = kSteps;
  r.cross.matched = 100;
  for (int rank = 0; rank < ranks; ++rank) {
    RankSummary s;
    s.rank = rank;
    s.has_gpu = true;
    s.path = fmt::format("rank{}.json", rank);
    const int64_t step_ns = (rank == kSlowRank ? 300 : 100) * kMs;
    for (int i = 0; i < kSteps; ++i) {
      StepBreakdown b;
      b.name = fmt::format("ProfilerStep#{}", i);
      b.number = i;
      b.begin_ns = i * step_ns;
      b.end_ns = b.begin_ns + step_ns;
      b.compute_ns = rank == kIdleRank ? 10 * kMs : (50 + rank % 7) * kMs;
      b.exposed_comm_ns = 5 * kMs;
      b.idle_ns = step_ns - b.compute_ns - b.exposed_comm_ns;
      s.total.end_ns += b.wall_ns();
      s.total.compute_ns += b.compute_ns;
      s.total.exposed_comm_ns += b.exposed_comm_ns;
      s.total.idle_ns += b.idle_ns;
      s.steps.push_back(b);
    }
    for (int g = 0; g < kGapsPerRank; ++g) {
      s.top_gaps.push_back({.begin_ns = g * kMs,
                            .length_ns = (rank == kSlowRank ? 90 : 1 + g) * kMs,
                            .step = g,
                            .next_op = "ncclKernel_AllReduce",
                            .launched_by = "c10d::allreduce_",
                            .cpu_before = "aten::mm"});
    }
    s.launch_delay = {.count = 100,
                      .p50_ns = 10'000,
                      .p90_ns = 20'000,
                      .p99_ns = 40'000,
                      .max_ns = rank == kSlowRank ? 9'000'000 : 80'000};
    s.verdict = rank == kSlowRank ? "host-bound" : "GPU-bound";
    s.evidence = fmt::format("compute {}%", rank % 7 + 50);
    r.ranks.push_back(s);
    r.cross.ranks.push_back({.rank = rank,
                             .matched = 100,
                             .times_last = rank == kSlowRank ? 100 : 0,
                             .wait_ns = rank == kSlowRank ? 0 : 200 * kMs,
                             .cost_ns = rank == kSlowRank ? 200 * kMs * (ranks - 1) : 0});
    HtaRankResult h;
    h.rank = rank;
    h.idle_pct =
        100.0 * static_cast<double>(s.total.idle_ns) / static_cast<double>(s.total.wall_ns());
    h.kernel_type_us = {{"COMPUTATION", 1000}};
    r.hta.push_back(h);
  }
  for (int i = 0; i < kSteps; ++i) {
    r.cross.step_spread.push_back({.step = i,
                                   .min_ns = 100 * kMs,
                                   .max_ns = ranks > kSlowRank ? 300 * kMs : 100 * kMs,
                                   .fastest_rank = 0,
                                   .slowest_rank = kSlowRank});
  }
  for (int c = 0; c < 5; ++c) {
    MatchedCollective m;
    m.process_group = "0";
    m.collective = "allreduce";
    m.key = m.step = c;
    m.last_rank = kSlowRank;
    m.skew_ns = m.last_cost_ns = 40 * kMs;
    for (int rank = 0; rank < ranks; ++rank) {
      m.wait_ns.emplace_back(rank, rank == kSlowRank ? 0 : 40 * kMs - rank * 1000);
    }
    r.cross.worst.push_back(m);
  }
  if (ranks > kSlowRank) r.cross.stragglers.push_back({kSlowRank, 100, 100, 200 * kMs});
  return r;
}

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST(TextReport, ThousandRanksFitAScreenAndNameTheOutliers) {
  const AnalysisResult r = Synthetic(1000);
  for (bool hta : {false, true}) {
    const std::string text = TextReport(r, {.hta_compat = hta});
    SCOPED_TRACE(text);
    EXPECT_LT(Lines(text), hta ? 75u : 60u);
    EXPECT_NE(text.find("  slowest: rank 617 (1500.00 ms)"), std::string::npos);
    EXPECT_NE(text.find("  most idle: rank 42 (85.00%)"), std::string::npos);
    EXPECT_NE(text.find("  others waited most for: rank 617 (199800.00 ms)"), std::string::npos);
    EXPECT_NE(text.find("  host-bound: 1 of 1000 ranks; slowest, rank 617"), std::string::npos);
    EXPECT_NE(text.find("  GPU-bound: 999 of 1000 ranks"), std::string::npos);
    EXPECT_NE(text.find("  rank 617: last at 100 of 100 collectives"), std::string::npos);
    // The largest idle gaps are rank 617's; the rest are counted, not printed.
    EXPECT_NE(text.find("largest idle gaps, the 5 longest of 5000 kept:\n  rank 617 "),
              std::string::npos);
    EXPECT_NE(text.find("  ... 4995 more: see --full or --csv (idle_gaps.csv)"), std::string::npos);
    EXPECT_NE(text.find("per step (ms), the 5 longest of 5000 rank-steps:"), std::string::npos);
    EXPECT_NE(text.find(" 996 more ranks waited (p50 "), std::string::npos);
    EXPECT_EQ(text.find("  rank 999"), std::string::npos);  // no per-rank rows
  }
}

TEST(TextReport, FullPrintsEveryRow) {
  const AnalysisResult r = Synthetic(1000);
  const std::string text = TextReport(r, {.hta_compat = true, .full = true});
  // Per rank: time split, waits, launch delay, verdict, HTA row; per rank and step; every gap.
  EXPECT_GT(Lines(text), 1000u * (5 + kSteps + kGapsPerRank));
  EXPECT_NE(text.find("  rank 999: GPU-bound: compute 55%"), std::string::npos);
  EXPECT_NE(text.find("  ProfilerStep#4       999      100.00"), std::string::npos);
  EXPECT_NE(text.find("  rank 999  step 4           5.00 ms"), std::string::npos);
  EXPECT_NE(text.find(" rank 999 waited 39.00 ms;"), std::string::npos);
  EXPECT_EQ(text.find("more: see --full"), std::string::npos);
}

TEST(TextReport, FewRanksKeepPerRankTablesButSummariseSteps) {
  const AnalysisResult r = Synthetic(8);
  const std::string text = TextReport(r, {});
  SCOPED_TRACE(text);
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_NE(text.find(fmt::format("  rank {}: GPU-bound: ", rank)), std::string::npos);
  }
  EXPECT_NE(text.find("  ... 35 more: see --full or --csv (steps.csv)"), std::string::npos);
  EXPECT_NE(text.find("  ... 35 more: see --full or --csv (idle_gaps.csv)"), std::string::npos);
  EXPECT_EQ(text.find("across 8 ranks"), std::string::npos);
  // With every row fitting, the full text is the default text.
  const AnalysisResult one = Synthetic(1);
  EXPECT_EQ(TextReport(one, {}), TextReport(one, {.full = true}));
}

TEST(TextReport, ManyUnreadableFilesAreCountedNotListed) {
  // 10,000 empty files printed 20,001 lines.
  AnalysisResult r;
  for (int i = 0; i < 10'000; ++i)
    r.errors.push_back(fmt::format("r{}.json: the file is empty", i));
  const std::string text = TextReport(r, {});
  EXPECT_LT(Lines(text), 20u) << text;
  EXPECT_NE(text.find("error: r9.json: the file is empty"), std::string::npos);
  EXPECT_EQ(text.find("error: r10.json"), std::string::npos);
  EXPECT_NE(text.find("error: ... and 9990 more like these"), std::string::npos);
  EXPECT_GT(Lines(TextReport(r, {.full = true})), 10'000u);
}

// A full disk while writing the CSVs was reported as success, leaving a truncated steps.csv
// (issue 14 item 10). The child process runs with RLIMIT_FSIZE as its "disk": writes past 64 KiB
// fail with EFBIG.
TEST(JsonReport, CountsMalformedEventsByField) {
  AnalysisResult r = Synthetic(2);
  r.ranks[1].stats.malformed_ph = 1;
  r.ranks[1].stats.malformed_ts = 2;
  r.ranks[1].stats.malformed_dur = 3;
  const nlohmann::json j = nlohmann::json::parse(JsonReport(r, /*hta_compat=*/false));
  const nlohmann::json* rank1 = nullptr;
  for (const nlohmann::json& rank : j.at("ranks")) {
    if (rank.at("rank") == 1) rank1 = &rank;
  }
  ASSERT_NE(rank1, nullptr) << j.dump();
  EXPECT_EQ(rank1->at("import").at("malformed_events"),
            nlohmann::json({{"ph", 1}, {"ts", 2}, {"dur", 3}}));
}

TEST(CsvReport, AFullDiskIsAnErrorAndLeavesNoTruncatedFile) {
  const AnalysisResult r = Synthetic(1000);
  char dir[] = "/tmp/titan_csv_full_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit = {64 << 10, 64 << 10};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const Status s = WriteCsvReport(r, false, dir);
    ::_exit(s.ok() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the write was reported as ok";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    // Whatever was written is whole (tables under the limit); nothing half-written stays.
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
    EXPECT_NE(entry.path().filename(), "steps.csv");  // 5,000 rows: over the limit
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace titan::trace
