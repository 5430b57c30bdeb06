// The series readers and the grid: each format titan plan reads, what they skip and say, and
// how points become steps.
#include <cmath>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "src/plan/prometheus_source.h"
#include "src/plan/read_series.h"
#include "src/plan/series.h"
#include "src/plan/series_csv.h"
#include "src/plan/series_json.h"
#include "src/plan/series_jsonl.h"

namespace titan::plan {
namespace {

using ::testing::HasSubstr;

constexpr double kMay1 = 1588291200;  // 2020-05-01T00:00:00Z

TEST(SeriesCsvTest, SumsNamedColumnsAndSkipsBadRowsWithTheirLine) {
  const std::string csv =
      "time,running_gpu_num,pending_gpu_num,idle\n"
      "2020-05-01 00:00:00,10,2,5\n"
      "2020-05-01 00:01:00,11,x,5\n"
      "not a time,1,1,1\n"
      "2020-05-01 00:02:00,12,0,5\n";
  auto s = ReadSeriesCsv(csv, "vc.csv", "running_gpu_num+pending_gpu_num");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->points.size(), 2u);
  EXPECT_EQ(s->points[0], std::make_pair(kMay1, 12.0));
  EXPECT_EQ(s->points[1], std::make_pair(kMay1 + 120, 12.0));
  EXPECT_EQ(s->skips.skipped, 2);
  EXPECT_THAT(s->skips.examples[0], HasSubstr("vc.csv:3: pending_gpu_num 'x'"));
  EXPECT_THAT(s->skips.examples[1], HasSubstr("vc.csv:4: 'not a time' is not a time"));
  EXPECT_EQ(s->kind, PointKind::kGauge);
}

TEST(SeriesCsvTest, AMissingColumnNamesTheColumnsThereAre) {
  auto s = ReadSeriesCsv("time,a,b\n1,2,3\n", "f.csv", "c");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("no column 'c'; the columns are: time, a, b"));
  auto none = ReadSeriesCsv("time,a,b\n1,2,3\n", "f.csv", "");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("--value"));
}

TEST(SeriesCsvTest, TwoColumnsNeedNoValueAndAHeaderlessFileIsTimeValue) {
  auto named = ReadSeriesCsv("demand,timestamp\n5,100\n6,200\n", "f.csv", "");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->points[1], std::make_pair(200.0, 6.0));  // the time column found by name
  auto bare = ReadSeriesCsv("100,5\n200,6\n", "f.csv", "");
  ASSERT_TRUE(bare.ok());
  ASSERT_EQ(bare->points.size(), 2u);
  EXPECT_EQ(bare->points[0], std::make_pair(100.0, 5.0));
}

TEST(SeriesCsvTest, AzureTracesAreRequestsOrTokensPerSecond) {
  const std::string trace =
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:17:03.9799600,4808,10\n"
      "2023-11-16 18:17:04.0319600,3180,8\n"
      "2023-11-16 18:18:10.5,100,20\n";
  auto requests = ReadSeriesCsv(trace, "t.csv", "");
  ASSERT_TRUE(requests.ok());
  EXPECT_EQ(requests->kind, PointKind::kEvents);
  EXPECT_EQ(requests->unit, "requests/s");
  auto grid = Regularize(*requests, 60, Aggregate::kMean);
  ASSERT_TRUE(grid.ok());
  ASSERT_EQ(grid->size(), 2u);
  EXPECT_DOUBLE_EQ(grid->values[0], 2.0 / 60);
  EXPECT_DOUBLE_EQ(grid->values[1], 1.0 / 60);
  auto tokens = ReadSeriesCsv(trace, "t.csv", "ContextTokens+GeneratedTokens");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->unit, "tokens/s");
  EXPECT_EQ(tokens->points[0].second, 4818);
}

TEST(SeriesCsvTest, LoadTimelinesAreOffsetsWithoutAWallClock) {
  auto s = ReadSeriesCsv(
      "second,planned,completed,errors,in_flight_max,output_tokens,ttft_p50_ms,ttft_p99_ms\n"
      "0,5,4,0,2,40,1,2\n1,7,6,0,2,60,1,2\n",
      "timeline.csv", "");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_FALSE(s->wall_clock);
  EXPECT_EQ(s->name, "planned");
  EXPECT_EQ(s->points[1], std::make_pair(1.0, 7.0));
}

TEST(SeriesJsonlTest, TimeKeysAndValueKeys) {
  auto s = ReadSeriesJsonl(
      "{\"time\": \"2020-05-01T00:00:00Z\", \"value\": 3}\n"
      "# a comment\n"
      "{\"time_ns\": 1588291260000000000, \"value\": 4.5}\n"
      "{\"ts\": 1588291320, \"other\": 1}\n"
      "[1, 2]\n",
      "s.jsonl", "");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->points.size(), 2u);
  EXPECT_EQ(s->points[1], std::make_pair(kMay1 + 60, 4.5));
  EXPECT_EQ(s->skips.skipped, 2);
  EXPECT_THAT(s->skips.examples[0], HasSubstr("s.jsonl:4: no number 'value'"));
  EXPECT_THAT(s->skips.examples[1], HasSubstr("s.jsonl:5: not a JSON object"));
}

TEST(SeriesJsonlTest, GatewayAccessLogsCountRequests) {
  const std::string log =
      "{\"batched\":false,\"e2e_ms\":248.7,\"endpoint\":\"completions\",\"status\":200,"
      "\"time_ns\":1796132968269201136,\"tokens_budgeted\":46}\n"
      "{\"batched\":false,\"e2e_ms\":12.7,\"endpoint\":\"completions\",\"status\":429,"
      "\"time_ns\":1796132968769201136,\"tokens_budgeted\":40}\n";
  auto s = ReadSeriesJsonl(log, "access.jsonl", "");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, PointKind::kEvents);
  EXPECT_EQ(s->source, "titan gateway access log");
  ASSERT_EQ(s->points.size(), 2u);
  EXPECT_EQ(s->points[0].second, 1);
  auto tokens = ReadSeriesJsonl(log, "access.jsonl", "tokens_budgeted");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->points[1].second, 40);
}

TEST(SeriesJsonTest, PrometheusSeriesAreAddedAtEachTime) {
  const std::string answer = R"({"status":"success","data":{"resultType":"matrix","result":[
    {"metric":{"__name__":"up","job":"a"},"values":[[100,"1"],[160,"2"],[220,"NaN"]]},
    {"metric":{"__name__":"up","job":"b"},"values":[[100,"10"],[160,"20"]]}]}})";
  auto s = ReadSeriesJson(answer, "q.json", "");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->name, "sum of 2 series");
  ASSERT_EQ(s->points.size(), 2u);
  EXPECT_EQ(s->points[0], std::make_pair(100.0, 11.0));
  EXPECT_EQ(s->points[1], std::make_pair(160.0, 22.0));
  EXPECT_EQ(s->skips.skipped, 1);  // the NaN sample
}

TEST(SeriesJsonTest, PrometheusErrorsAreQuoted) {
  auto s = ReadSeriesJson(
      R"({"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries"})",
      "q.json", "");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("Prometheus answered \"bad_data\": \"exceeded maximum resolution"));
  auto vector = ReadSeriesJson(R"({"status":"success","data":{"resultType":"vector","result":[]}})",
                               "q.json", "");
  ASSERT_FALSE(vector.ok());
  EXPECT_THAT(std::string(vector.status().message()), HasSubstr("query_range"));
  // A number beyond a double's range (read_series_fuzzer's find) is an error, not an exception.
  auto huge = ReadSeriesJson(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"values":[202e21320]}]}})",
      "q.json", "");
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(std::string(huge.status().message()), HasSubstr("q.json: not JSON"));
}

TEST(SeriesJsonTest, TitanLoadResultsGiveTheirTimelineOnTheWallClock) {
  const std::string run = R"({"kind":"titan.load.run","start_wall_ns":1588291200000000000,
    "timeline":[{"second":0,"planned":3,"completed":2,"output_tokens":30},
                {"second":1,"planned":5,"completed":5,"output_tokens":50}]})";
  auto s = ReadSeriesText(run, "run.json", "completed");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->wall_clock);
  EXPECT_EQ(s->points[1], std::make_pair(kMay1 + 1, 5.0));
  auto missing = ReadSeriesText(run, "run.json", "nope");
  EXPECT_FALSE(missing.ok());
}

TEST(ReadSeriesTest, UnknownContentNamesTheFormatsTried) {
  auto s = ReadSeriesText("hello world\n", "x.txt", "");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("tried CSV"));
  EXPECT_FALSE(ReadSeriesText("", "x.txt", "").ok());
}

TEST(RegularizeTest, GaugesAverageEachStepAndLeaveGapsAsNaN) {
  RawSeries raw;
  raw.points = {{kMay1 + 10, 1}, {kMay1 + 20, 3}, {kMay1 + 250, 7}};
  auto g = Regularize(raw, 60, Aggregate::kMean);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->start_seconds, kMay1);
  ASSERT_EQ(g->size(), 5u);
  EXPECT_EQ(g->values[0], 2);
  EXPECT_TRUE(std::isnan(g->values[1]));
  EXPECT_EQ(g->values[4], 7);
  EXPECT_EQ(g->Observed(), 2u);
  auto peak = Regularize(raw, 60, Aggregate::kMax);
  EXPECT_EQ(peak->values[0], 3);
}

TEST(RegularizeTest, DownsampleAlignsToTheCoarseStep) {
  RegularSeries s;
  s.start_seconds = kMay1 + 1800;  // half past: the first hour is partial
  s.step_seconds = 600;
  s.values = {1, 2, 3, 9, kNaN, 4};
  const RegularSeries h = Downsample(s, 6, Aggregate::kMax);
  EXPECT_EQ(h.start_seconds, kMay1);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h.values[0], 3);
  EXPECT_EQ(h.values[1], 9);
}

TEST(RegularizeTest, TooManyStepsIsRefusedWithWhatToDo) {
  RawSeries raw;
  raw.points = {{0, 1}, {1e9, 2}};
  auto g = Regularize(raw, 1, Aggregate::kMean);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("longer --step"));
}

TEST(PrometheusChunksTest, LongRangesTileInChunksOfAtMostTheLimit) {
  PrometheusRange r;
  r.start_seconds = kMay1;
  r.end_seconds = kMay1 + 30 * 86400;  // 43,201 points at one minute
  r.step_seconds = 60;
  const auto chunks = PrometheusChunks(r);
  ASSERT_EQ(chunks.size(), 4u);
  EXPECT_EQ(chunks.front().first, r.start_seconds);
  EXPECT_EQ(chunks.back().second, r.end_seconds);
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_LE((chunks[i].second - chunks[i].first) / 60 + 1, kPrometheusMaxPoints);
    if (i > 0) {
      EXPECT_EQ(chunks[i].first, chunks[i - 1].second + 60);
    }
  }
  EXPECT_EQ(UrlEncode("sum(rate(x[5m]))"), "sum%28rate%28x%5B5m%5D%29%29");
}

}  // namespace
}  // namespace titan::plan
