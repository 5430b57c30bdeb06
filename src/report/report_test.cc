#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/report/decimate.h"
#include "src/report/input.h"
#include "src/report/page.h"
#include "src/report/report.h"
#include "src/report/sections.h"

namespace titan::report {
namespace {

using ::testing::HasSubstr;

TEST(MinMaxDecimateTest, KeepsASpikeThatStridingWouldLose) {
  Columns in;
  for (int i = 0; i < 100000; ++i) {
    in.x.push_back(i * 0.01);  // 10 ms samples for 1000 s
    in.ys.resize(1);
    in.ys[0].push_back(i == 54321 ? 50.0 : 1.0 + 0.001 * (i % 7));
  }
  Columns out = MinMaxDecimate(in, 500);
  ASSERT_LE(out.x.size(), 1000u);
  ASSERT_EQ(out.ys[0].size(), out.x.size());
  double max = 0, min = 1e9;
  for (double v : out.ys[0]) {
    max = std::max(max, v);
    min = std::min(min, v);
  }
  EXPECT_EQ(max, 50.0);
  EXPECT_EQ(min, 1.0);
  for (size_t i = 1; i < out.x.size(); ++i) EXPECT_LE(out.x[i - 1], out.x[i]);
}

TEST(MinMaxDecimateTest, LeavesSmallInputsAndKeepsGaps) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Columns small{{1, 2, 3}, {{4, nan, 6}}};
  Columns same = MinMaxDecimate(small, 10);
  EXPECT_EQ(same.x, small.x);
  Columns in;
  in.ys.resize(2);
  for (int i = 0; i < 1000; ++i) {
    in.x.push_back(i);
    in.ys[0].push_back(i);
    in.ys[1].push_back(i < 500 ? nan : 2.0);  // a series that starts late
  }
  Columns out = MinMaxDecimate(in, 10);
  EXPECT_TRUE(std::isnan(out.ys[1][0]));
  EXPECT_EQ(out.ys[1].back(), 2.0);
  EXPECT_EQ(out.ys[0].front(), 0);
  EXPECT_EQ(out.ys[0].back(), 999);
}

TEST(RecogniseTest, NamesTheFileAndWhatWasExpected) {
  Result<Input> truncated = Recognise("run.json", R"({"kind":"titan.load.run","config":{)");
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), HasSubstr("run.json"));
  EXPECT_THAT(truncated.status().message(), HasSubstr("ends early"));
  Result<Input> other = Recognise("x.json", R"({"hello": 1, "world": 2})");
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("not a titan result"));
  EXPECT_THAT(other.status().message(), HasSubstr("[hello, world]"));
  Result<Input> cut =
      Recognise("events.jsonl", "{\"type\":\"start\",\"time_ns\":1}\n{\"type\":\"spawn\",\"ti");
  ASSERT_FALSE(cut.ok());
  EXPECT_THAT(cut.status().message(), HasSubstr("events.jsonl:2"));
  EXPECT_THAT(cut.status().message(), HasSubstr("cut"));
  // A number beyond a double's range is an error, not an exception out of the reader.
  Result<Input> huge = Recognise("big.json", R"({"kind":"titan.load.run","rate":202e21320})");
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(huge.status().message(), HasSubstr("big.json"));
}

TEST(RecogniseTest, RefusesDeepNestingBeforeParsing) {
  const std::string deep = "{\"kind\":\"titan.load.run\",\"config\":" + std::string(200000, '[') +
                           std::string(200000, ']') + "}";
  Result<Input> in = Recognise("deep.json", deep);
  ASSERT_FALSE(in.ok());
  EXPECT_THAT(in.status().message(), HasSubstr("deep.json"));
  EXPECT_THAT(in.status().message(), HasSubstr("nested deeper than"));
}

TEST(RecogniseTest, TellsEachKindApart) {
  EXPECT_EQ(Recognise("a", R"({"kind":"titan.load.run"})")->kind, InputKind::kLoadRun);
  EXPECT_EQ(Recognise("a", R"({"kind":"titan.load.sweep"})")->kind, InputKind::kLoadSweep);
  EXPECT_EQ(Recognise("a", R"({"ranks":[],"cross_rank":{}})")->kind, InputKind::kTraceAnalysis);
  EXPECT_EQ(Recognise("a", R"({"rows":[{"ettr":{}}],"sweep":"gpus"})")->kind, InputKind::kSim);
  EXPECT_EQ(Recognise("a", R"({"ettr":{},"analytic_ettr":1})")->kind, InputKind::kSim);
  EXPECT_EQ(Recognise("a", R"({"ettr":1,"seconds":{},"job":"j"})")->kind, InputKind::kRunLedger);
  EXPECT_EQ(
      Recognise("a", "{\"type\":\"start\",\"time_ns\":1}\n{\"type\":\"x\",\"time_ns\":2}\n")->kind,
      InputKind::kRunEvents);
  EXPECT_EQ(Recognise("a", R"({"traceEvents":[{"ph":"M","pid":1,"name":"process_name",
                               "args":{"name":"titan agent: signals"}}]})")
                ->kind,
            InputKind::kAgentDump);
  EXPECT_EQ(Recognise("a",
                      "{\"type\":\"start\",\"time_ns\":1,\"routing\":\"p2c\"}\n"
                      "{\"type\":\"shed\",\"time_ns\":2}\n")
                ->kind,
            InputKind::kGatewayEvents);
  EXPECT_EQ(Recognise("a", R"({"kind":"titan.plan.demand"})")->kind, InputKind::kPlan);
  EXPECT_EQ(
      Recognise("a", R"({"kind":"titan.plan.backtest","default_model":"titan","models":{}})")->kind,
      InputKind::kPlan);  // not titan predict's backtest, which has no kind
  EXPECT_FALSE(Recognise("a", R"({"kind":"titan.future.thing"})").ok());
}

TEST(BuildReportTest, AMismatchedInputNamesTheFieldAndTheFile) {
  Result<Input> in = Recognise("trace.json", R"({"ranks":[{"rank":0}],"cross_rank":{}})");
  ASSERT_TRUE(in.ok());
  Result<Report> report = BuildReport({*in}, {}, "t");
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.status().message(), HasSubstr("trace.json.ranks[0]"));
  EXPECT_THAT(report.status().message(), HasSubstr("\"total\" is missing"));
}

TEST(WriteReportTest, AFileNamedTwiceIsOneSection) {
  // `titan report x x ./x` drew three identical sections; the directory holding it too.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("titan-report-dedupe-{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string ledger = (dir / "sim.json").string();  // a section per sim result
  std::ofstream(ledger) << R"({"ettr":{"mean":0.9,"p5":0.8,"p95":0.95},"analytic_ettr":0.9})";
  const std::string out = (dir.parent_path() / fmt::format("dedupe-{}.html", getpid())).string();
  Result<Written> written = WriteReportFromPaths(
      {ledger, ledger, (dir / "." / "sim.json").string(), dir.string()}, out, "t");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->sections, 1u);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(out);
}

TEST(RenderHtmlTest, InlinesEverythingAndEscapesTheData) {
  Report report;
  Section section("a </script><script>alert(1)</script> title", "src");
  Plot plot;
  plot.title = "p";
  plot.x = {"t", "s"};
  plot.y = {"v", "ms"};
  plot.series = {{"s", "ms"}};
  plot.xs = {0, 1};
  plot.ys = {{1, std::numeric_limits<double>::quiet_NaN()}};
  section.Add(std::move(plot));
  report.sections.push_back(std::move(section));
  const std::string html = RenderHtml(report, "now");
  EXPECT_THAT(html, HasSubstr("Content-Security-Policy"));
  EXPECT_THAT(html, HasSubstr("default-src 'none'"));
  EXPECT_THAT(html, HasSubstr("uPlot"));
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_THAT(html, HasSubstr("[1,null]"));
}

TEST(PercentileTest, NearestRankIgnoringNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Percentile({5, 1, nan, 3}, 0.5), 3);
  EXPECT_EQ(Percentile({5, 1, 3}, 1), 5);
  EXPECT_EQ(Percentile({5, 1, 3}, 0), 1);
  EXPECT_TRUE(std::isnan(Percentile({nan}, 0.5)));
  EXPECT_EQ(TopIndices({1, nan, 7, 3}, 2), (std::vector<size_t>{2, 3}));
}

}  // namespace
}  // namespace titan::report
