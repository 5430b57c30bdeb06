#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/trace/analyses/intervals.h"
#include "src/trace/analyses/kernel_class.h"
#include "src/trace/analyze.h"
#include "src/trace/importers/importer.h"
#include "src/trace/merge.h"
#include "src/trace/testing/synthetic.h"
#include "src/trace/testing/temp_dir.h"

namespace titan::trace {
namespace {

constexpr int64_t kUs = 1000;

using testing::TempDir;

// 4 ranks, rank 2 arrives 5 ms late at every all-reduce (see testing/synthetic.h for the layout).
std::string WriteJob(const TempDir& dir, int late_rank = 2, int64_t late_us = 5000) {
  for (int r = 0; r < 4; ++r) {
    testing::SyntheticOptions o;
    o.rank = r;
    o.step_us = 12'000;
    o.late_us = r == late_rank ? late_us : 0;
    o.max_late_us = late_us;
    o.pretty = r % 2 == 1;
    dir.Write(fmt::format("trace_{}.json", r), testing::KinetoTrace(o));
  }
  return dir.path();
}

TEST(Intervals, UnionSubtractIntersect) {
  std::vector<Interval> u = Union({{5, 10}, {0, 3}, {3, 4}, {8, 12}, {20, 20}});
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].begin_ns, 0);
  EXPECT_EQ(u[0].end_ns, 4);
  EXPECT_EQ(u[1].end_ns, 12);
  EXPECT_EQ(TotalLength(u), 11);
  std::vector<Interval> minus = Subtract(u, {{1, 2}, {6, 7}});
  EXPECT_EQ(TotalLength(minus), 9);
  EXPECT_EQ(IntersectionLength(u, {{2, 6}}), 3);
  EXPECT_EQ(TotalLength(Clip(u, 2, 9)), 6);
}

// HTA v0.6.1's name patterns: a CUDA "Stream Sync" was computation (and overlapped memcpys as
// "COMPUTATION overlapping MEMORY"); MTIA's dma_request was computation.
TEST(KernelClass, HtaClassesFollowHtaPatterns) {
  EXPECT_EQ(HtaClassify("Memcpy DtoH (Device -> Pageable)"), HtaKernelType::kMemory);
  EXPECT_EQ(HtaClassify("Memset (Device)"), HtaKernelType::kMemory);
  EXPECT_EQ(HtaClassify("dma_request"), HtaKernelType::kMemory);
  EXPECT_EQ(HtaClassify("hipMemcpyWithStream"), HtaKernelType::kCommunication);  // HTA's ^hip
  EXPECT_EQ(HtaClassify("Stream Sync"), HtaKernelType::kOther);
  EXPECT_EQ(HtaClassify("Stream Wait Event"), HtaKernelType::kOther);
  EXPECT_EQ(HtaClassify("pe_exe"), HtaKernelType::kOther);
  EXPECT_EQ(HtaClassify("void copy_Memcpy_like_kernel()"), HtaKernelType::kOther);
  EXPECT_EQ(HtaClassify("volta_sgemm_32x128_tn"), HtaKernelType::kComputation);
  EXPECT_EQ(HtaKernelTypeName(HtaKernelType::kOther), "OTHER");
}

TEST(KernelClass, RecognisesModernAndVendorCollectives) {
  EXPECT_EQ(ClassifyGpuOp(EventKind::kKernel,
                          "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            GpuClass::kCommunication);
  EXPECT_EQ(HtaClassify("ncclDevKernel_AllGather_RING_LL()"), HtaKernelType::kCommunication);
  EXPECT_EQ(CollectiveOfName("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(x)"), "reducescatter");
  EXPECT_EQ(CollectiveOfName("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"), "allreduce");
  EXPECT_EQ(CollectiveOfName("gloo:all_reduce"), "allreduce");
  EXPECT_EQ(CollectiveOfName("aten::mm"), "");
  EXPECT_EQ(ClassifyGpuOp(EventKind::kGpuMemcpy, "Memcpy DtoD (Device -> Device)"),
            GpuClass::kMemory);
  EXPECT_EQ(NormaliseCollective("_allgather_base"), "allgather");
}

TEST(Analysis, PerStepBreakdownIsExact) {
  TempDir dir;
  WriteJob(dir);
  AnalyzeOptions options;
  AnalysisResult r = AnalyzeTraces(*ExpandTracePaths({dir.path()}), options);
  ASSERT_TRUE(r.errors.empty());
  ASSERT_EQ(r.ranks.size(), 4u);
  const RankSummary& on_time = r.ranks[0];
  ASSERT_EQ(on_time.steps.size(), 3u);
  for (const StepBreakdown& b : on_time.steps) {
    EXPECT_EQ(b.wall_ns(), 12'000 * kUs);
    EXPECT_EQ(b.compute_ns, 4'000 * kUs);
    EXPECT_EQ(b.exposed_comm_ns, 6'000 * kUs);  // waits 5 ms for rank 2, then 1 ms of transfer
    EXPECT_EQ(b.exposed_mem_ns, 0);
    EXPECT_EQ(b.idle_ns, 2'000 * kUs);
  }
  EXPECT_EQ(on_time.verdict, "communication-bound");
  const RankSummary& late = r.ranks[2];
  EXPECT_EQ(late.total.exposed_comm_ns, 3 * 1'000 * kUs);
  EXPECT_EQ(late.total.idle_ns, 3 * 7'000 * kUs);
  EXPECT_EQ(late.verdict, "host-bound");
  ASSERT_FALSE(late.top_gaps.empty());
  EXPECT_EQ(late.top_gaps[0].length_ns, 5'100 * kUs);
  EXPECT_EQ(late.top_gaps[0].launched_by, "record_param_comms");
  EXPECT_EQ(late.top_gaps[0].launch_after_gap_ns, 5'000 * kUs);
  EXPECT_EQ(late.launch_delay.count, 6);
  EXPECT_EQ(late.launch_delay.max_ns, 100 * kUs);
}

TEST(Analysis, LateRankIsTheStragglerWithTheRightWait) {
  TempDir dir;
  WriteJob(dir, /*late_rank=*/2, /*late_us=*/5000);
  AnalysisResult r = AnalyzeTraces(*ExpandTracePaths({dir.path()}), AnalyzeOptions{});
  const CrossRankResult& c = r.cross;
  EXPECT_EQ(c.matched, 3);
  EXPECT_EQ(c.unmatched, 0);
  ASSERT_EQ(c.stragglers.size(), 1u);
  EXPECT_EQ(c.stragglers[0].rank, 2);
  EXPECT_EQ(c.stragglers[0].times_last, 3);
  EXPECT_EQ(c.stragglers[0].cost_per_step_ns, 5'000 * kUs);
  for (const RankWaits& w : c.ranks) {
    EXPECT_EQ(w.wait_ns, w.rank == 2 ? 0 : 3 * 5'000 * kUs) << "rank " << w.rank;
  }
  ASSERT_FALSE(c.worst.empty());
  EXPECT_EQ(c.worst[0].last_rank, 2);
  EXPECT_EQ(c.worst[0].skew_ns, 5'000 * kUs);
  EXPECT_EQ(c.worst[0].collective, "allreduce");
}

TEST(Analysis, NoStragglerWhenEveryoneIsOnTime) {
  TempDir dir;
  WriteJob(dir, /*late_rank=*/-1, /*late_us=*/0);
  AnalysisResult r = AnalyzeTraces(*ExpandTracePaths({dir.path()}), AnalyzeOptions{});
  EXPECT_TRUE(r.cross.stragglers.empty());
  for (const RankWaits& w : r.cross.ranks) EXPECT_EQ(w.wait_ns, 0);
}

TEST(Analysis, LegacyTracesAreAlignedOnCollectiveEnds) {
  // Two CPU-only ranks whose clocks start at different times; rank 1 reaches each all-reduce
  // 3 ms after rank 0 and all-reduces end together.
  TempDir dir;
  for (int r = 0; r < 2; ++r) {
    int64_t origin = r == 0 ? 0 : 777'000;  // rank 1's profiler started 777 ms earlier
    std::string events;
    for (int s = 0; s < 2; ++s) {
      int64_t t0 = origin + 1000 + s * 20'000;
      int64_t arrive = t0 + 5'000 + (r == 1 ? 3'000 : 0);
      int64_t done = t0 + 5'000 + 3'000 + 500;
      events += fmt::format(
          R"({}{{"name": "ProfilerStep#{}", "ph": "X", "ts": {}, "dur": 20000, "tid": 1, "pid": "CPU functions"}},)"
          R"({{"name": "aten::mm", "ph": "X", "ts": {}, "dur": 4000, "tid": 1, "pid": "CPU functions"}},)"
          R"({{"name": "gloo:all_reduce", "ph": "X", "ts": {}, "dur": {}, "tid": 2, "pid": "CPU functions"}})",
          s ? "," : "", s + 1, t0, t0 + 10, arrive, done - arrive);
    }
    dir.Write(fmt::format("rank{}.json", r), "[" + events + "]");
  }
  AnalysisResult r = AnalyzeTraces(*ExpandTracePaths({dir.path()}), AnalyzeOptions{});
  ASSERT_TRUE(r.errors.empty());
  EXPECT_NE(r.cross.clock.find("collective end"), std::string::npos);
  ASSERT_EQ(r.cross.stragglers.size(), 1u);
  EXPECT_EQ(r.cross.stragglers[0].rank, 1);
  EXPECT_EQ(r.cross.ranks[0].wait_ns, 2 * 3'000 * kUs);
  EXPECT_EQ(r.ranks[0].warnings.size(), 1u);  // rank from the file name
}

TEST(Analysis, BadFilesAreReportedAndTheOtherRanksStillAnalysed) {
  TempDir dir;
  WriteJob(dir);
  std::string dup =
      dir.Write("copy_of_rank1.json", testing::KinetoTrace(testing::SyntheticOptions{.rank = 1}));
  std::string broken = dir.Write("trace_9.json", "{\"traceEvents\": [{\"ph\": \"X\"");
  AnalysisResult r = AnalyzeTraces(*ExpandTracePaths({dir.path()}), AnalyzeOptions{});
  EXPECT_EQ(r.ranks.size(), 4u);
  ASSERT_EQ(r.errors.size(), 2u);
  std::string all = r.errors[0] + "\n" + r.errors[1];
  EXPECT_NE(all.find("rank 1 is given twice"), std::string::npos) << all;
  EXPECT_NE(all.find(broken), std::string::npos) << all;
}

TEST(Analysis, EmptyDirectoryIsAClearError) {
  TempDir dir;
  Result<std::vector<std::string>> files = ExpandTracePaths({dir.path()});
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("has no trace files"), std::string_view::npos);
  EXPECT_NE(files.status().message().find(dir.path()), std::string_view::npos);
}

// A Kineto rank with baseTimeNanoseconds: one kernel at ts 1.5 us relative to 1.7e18 ns.
std::string WriteEpochRank(const TempDir& dir) {
  return dir.Write(
      "rank0.json",
      R"({"distributedInfo": {"rank": 0}, "baseTimeNanoseconds": 1700000000000000000,)"
      R"( "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5,)"
      R"( "dur": 2, "args": {"stream": 7}}]})");
}

TEST(Merge, RanksAndAgentCountersShareTheEpochClock) {
  TempDir dir;
  std::string rank = WriteEpochRank(dir);
  std::string agent = dir.Write(
      "agent.json",
      R"({"traceEvents": [{"ph": "C", "name": "gpu0.util", "pid": 1, "ts": 1700000000000001.5,)"
      R"( "args": {"value": 42}}]})");
  std::string out = dir.path() + "/merged.json";
  Result<MergeStats> stats = MergeTelemetry({rank}, agent, out);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->rank_events, 1u);
  EXPECT_EQ(stats->agent_events, 1u);
  std::ifstream f(out);
  nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_EQ(j["traceEvents"].size(), 2u);
  const auto& kernel = j["traceEvents"][0];
  EXPECT_EQ(kernel["pid"], "rank 0: 0");
  EXPECT_DOUBLE_EQ(kernel["ts"].get<double>(), 1700000000000001.5);  // same instant as the counter
  EXPECT_EQ(j["traceEvents"][1]["args"]["value"], 42);
}

// Agent counters at impossible times (a probe merged ts 1e300 and -9e18 into the output) are left
// out and counted; rank events past the bound already were (malformed).
TEST(Merge, AgentCountersAtImpossibleTimesAreLeftOutAndCounted) {
  TempDir dir;
  std::string rank = WriteEpochRank(dir);
  std::string agent = dir.Write(
      "agent.json",
      R"({"traceEvents": [{"ph": "C", "name": "a", "pid": 1, "ts": 1e300, "args": {"v": 1}},)"
      R"( {"ph": "C", "name": "b", "pid": 1, "ts": -9e18, "args": {"v": 2}},)"
      R"( {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "agent"}},)"
      R"( {"ph": "C", "name": "c", "pid": 1, "ts": 1700000000000001.5, "args": {"v": 3}}]})");
  std::string out = dir.path() + "/merged.json";
  Result<MergeStats> stats = MergeTelemetry({rank}, agent, out);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->agent_events, 2u);  // the metadata event (no ts) and counter c
  ASSERT_EQ(stats->warnings.size(), 1u);
  EXPECT_EQ(stats->warnings[0],
            agent +
                ": 2 agent events with a \"ts\" that is not a number of microseconds within "
                "+-2^62 ns were left out");
  std::ifstream f(out);
  nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_EQ(j["traceEvents"].size(), 3u);
  EXPECT_EQ(j["traceEvents"][2]["name"], "c");
}

TEST(Merge, AnOutputThatIsAnInputIsRefusedAndNothingIsTouched) {
  TempDir dir;
  const std::string trace =
      R"({"distributedInfo": {"rank": 0}, "baseTimeNanoseconds": 1700000000000000000,)"
      R"( "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5,)"
      R"( "dur": 2, "args": {"stream": 7}}]})";
  std::string rank = dir.Write("rank0.json", trace);
  std::string agent = dir.Write("agent.json", R"({"traceEvents": []})");
  for (const std::string& out : {rank, agent, dir.path() + "/./rank0.json"}) {
    Result<MergeStats> stats = MergeTelemetry({rank}, agent, out);
    ASSERT_FALSE(stats.ok()) << out;
    EXPECT_NE(stats.status().message().find("is one of the inputs"), std::string_view::npos);
  }
  std::ifstream f(rank);
  std::string kept((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, trace);
  // A merge that fails half way (the agent dump is not JSON) leaves a previous output alone.
  std::string bad = dir.Write("bad.json", "{\"traceEvents\": [ {\"ph\": ");
  std::string out = dir.Write("merged.json", "previous");
  EXPECT_FALSE(MergeTelemetry({rank}, bad, out).ok());
  std::ifstream g(out);
  std::string previous((std::istreambuf_iterator<char>(g)), std::istreambuf_iterator<char>());
  EXPECT_EQ(previous, "previous");
}

}  // namespace
}  // namespace titan::trace
