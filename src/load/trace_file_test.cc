#include "src/load/trace_file.h"

#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace titan::load {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

std::vector<TraceRequest> MustParse(std::string_view text) {
  Result<std::vector<TraceRequest>> trace = ParseTrace(text, "trace");
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  return trace.value_or({});
}

std::string ErrorOf(std::string_view text, StatusCode code = StatusCode::kInvalidArgument) {
  Result<std::vector<TraceRequest>> trace = ParseTrace(text, "trace.csv");
  EXPECT_FALSE(trace.ok()) << text;
  if (trace.ok()) return "";
  EXPECT_EQ(trace.status().code(), code) << trace.status().ToString();
  return std::string(trace.status().message());
}

TEST(TraceFileTest, ReadsAzureCsv) {
  std::vector<TraceRequest> trace = MustParse(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:15:46.6805900,4808,10\n"
      "2023-11-16 18:15:50.9951690,3180,8\n"
      "2023-11-16 18:16:01,0,0\n"
      "2023-11-17 00:00:00.5,100,2000\n");
  ASSERT_EQ(trace.size(), 4u);
  EXPECT_EQ(trace[0], (TraceRequest{0, 4808, 10, {}}));
  EXPECT_EQ(trace[1].offset_ns, 4 * kS + 314'579'000);
  EXPECT_EQ(trace[1].input_tokens, 3180);
  EXPECT_EQ(trace[2].offset_ns, 14 * kS + 319'410'000);
  EXPECT_EQ(trace[3].offset_ns, (5 * 3600 + 44 * 60 + 13) * kS + 819'410'000);
  EXPECT_EQ(trace[3].output_tokens, 2000);
}

TEST(TraceFileTest, CsvColumnsByHeaderWithCrlfBomQuotesAndExtraColumns) {
  std::vector<TraceRequest> trace = MustParse(
      "\xEF\xBB\xBF"
      "id,generatedtokens,\"TIMESTAMP\",ContextTokens\r\n"
      "a,5,2024-05-10T00:00:01.25,7\r\n"
      "\r\n"
      "b,6,\"2024-05-10 00:00:00\",8\r\n");
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_EQ(trace[0], (TraceRequest{0, 8, 6, {}}));
  EXPECT_EQ(trace[1], (TraceRequest{1250 * kMs, 7, 5, {}}));
}

TEST(TraceFileTest, SortsStablyWithinTheAllowedDisorder) {
  std::vector<TraceRequest> trace = MustParse(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:00:30,1,1\n"
      "2023-11-16 18:00:10,2,1\n"
      "2023-11-16 18:00:30,3,1\n"
      "2023-11-16 18:00:10,4,1\n");
  ASSERT_EQ(trace.size(), 4u);
  EXPECT_EQ(trace[0].input_tokens, 2);
  EXPECT_EQ(trace[1].input_tokens, 4);
  EXPECT_EQ(trace[2].input_tokens, 1);
  EXPECT_EQ(trace[3].input_tokens, 3);
  EXPECT_EQ(trace[2].offset_ns, 20 * kS);
}

TEST(TraceFileTest, CsvErrorsNameLineColumnAndExpectation) {
  const std::string header = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  EXPECT_EQ(ErrorOf(header + "2023-11-16 18:15:46.6805900,4808,10\n"
                             "2023-11-16 18:15:47.6805900,abc,10\n"),
            "trace.csv:3:29: expected an integer number of ContextTokens, got 'abc'");
  EXPECT_EQ(ErrorOf(header + "2023-11-16 18:15:46,1, -4\n"),
            "trace.csv:2:24: GeneratedTokens must be in [0, 10000000], got -4");
  EXPECT_EQ(ErrorOf(header + "2023-11-16 18:15:46,10000001,4\n"),
            "trace.csv:2:21: ContextTokens must be in [0, 10000000], got 10000001");
  EXPECT_EQ(ErrorOf(header + "2023-11-16 18:15,1,4\n"),
            "trace.csv:2:1: expected a TIMESTAMP like 2023-11-16 18:15:46.6805900, got "
            "'2023-11-16 18:15'");
  EXPECT_NE(ErrorOf(header + "2023-02-29 00:00:00,1,4\n").find("not a valid date"),
            std::string::npos);
  EXPECT_NE(ErrorOf(header + "2023-01-01 00:00:00.1234567890,1,4\n").find("expected a TIMESTAMP"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(header + "2023-01-01 00:00:00,1\n"),
            "trace.csv:2:1: expected 3 comma-separated columns as in the header, got 2");
  EXPECT_NE(ErrorOf(header + "2023-01-01 00:10:00,1,1\n2023-01-01 00:08:59,1,1\n")
                .find("trace.csv:3:1: time goes back by 61.000 s"),
            std::string::npos);
  EXPECT_NE(ErrorOf(header + "2023-01-01 00:00:00,1,1\n2024-01-03 00:00:00,1,1\n",
                    StatusCode::kOutOfRange)
                .find("trace.csv:3:1: this time is more than 366 days"),
            std::string::npos);
}

TEST(TraceFileTest, RejectsUnknownEmptyAndOversizedInput) {
  EXPECT_NE(ErrorOf("time,prompt,output\n1,2,3\n").find("trace.csv:1:1: unrecognised trace format"),
            std::string::npos);
  EXPECT_NE(ErrorOf("").find("no requests"), std::string::npos);
  EXPECT_NE(ErrorOf("TIMESTAMP,ContextTokens,GeneratedTokens\n").find("no requests"),
            std::string::npos);
  std::string long_line = "{\"time_s\": 0, \"input_tokens\": 1, \"output_tokens\": 1, \"x\": \"" +
                          std::string(kMaxTraceLineBytes, 'a') + "\"}\n";
  EXPECT_NE(ErrorOf(long_line, StatusCode::kOutOfRange).find("trace.csv:1:1: line is longer"),
            std::string::npos);
}

TEST(TraceFileTest, ReadsMooncakeJsonLines) {
  std::vector<TraceRequest> trace = MustParse(
      "{\"timestamp\": 27482, \"input_length\": 6955, \"output_length\": 52, \"hash_ids\": [46, "
      "47, 48]}\n"
      "\n"
      "{\"timestamp\": 30535, \"input_length\": 6472, \"output_length\": 26, \"hash_ids\": [46, "
      "18446744073709551615]}\n"
      "{\"timestamp\": 27482.5, \"input_length\": 1, \"output_length\": 2, \"extra\": {\"a\": "
      "1}}\n");
  ASSERT_EQ(trace.size(), 3u);
  EXPECT_EQ(trace[0], (TraceRequest{0, 6955, 52, {46, 47, 48}}));
  EXPECT_EQ(trace[1], (TraceRequest{500'000, 1, 2, {}}));
  EXPECT_EQ(trace[2], (TraceRequest{3053 * kMs, 6472, 26, {46, 18446744073709551615ULL}}));
}

TEST(TraceFileTest, ReadsTitanJsonLines) {
  std::vector<TraceRequest> trace = MustParse(
      "{\"time_s\": 1.5, \"input_tokens\": 100, \"output_tokens\": 20}\n"
      "  {\"time_s\": 2, \"input_tokens\": 10, \"output_tokens\": 0, \"hash_ids\": [1]}  \r\n");
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_EQ(trace[0], (TraceRequest{0, 100, 20, {}}));
  EXPECT_EQ(trace[1], (TraceRequest{500 * kMs, 10, 0, {1}}));
}

TEST(TraceFileTest, JsonErrorsNameLineColumnAndExpectation) {
  const std::string ok = "{\"time_s\": 0, \"input_tokens\": 1, \"output_tokens\": 1}\n";
  EXPECT_EQ(ErrorOf(ok + "{\"time_s\": 1, \"input_tokens\": \"abc\", \"output_tokens\": 1}\n"),
            "trace.csv:2:31: expected an integer number of tokens for \"input_tokens\", got "
            "\"abc\"");
  EXPECT_EQ(ErrorOf(ok + "{\"time_s\": 1, \"input_tokens\": 2.5, \"output_tokens\": 1}\n"),
            "trace.csv:2:31: expected an integer number of tokens for \"input_tokens\", got 2.5");
  EXPECT_EQ(ErrorOf(ok + "{\"time_s\": 1, \"input_tokens\": 1, \"output_tokens\": -1}\n"),
            "trace.csv:2:51: \"output_tokens\" must be in [0, 10000000], got -1");
  EXPECT_EQ(ErrorOf(ok + "{\"time_s\": 1, \"input_tokens\": 1}\n"),
            "trace.csv:2:1: missing \"output_length\" (or \"output_tokens\"): the number of "
            "tokens");
  EXPECT_EQ(ErrorOf(ok + "{\"input_tokens\": 1, \"output_tokens\": 1}\n"),
            "trace.csv:2:1: missing \"timestamp\" (ms) or \"time_s\" (seconds): the request's "
            "send time");
  EXPECT_EQ(ErrorOf(ok + "{\"time_s\": 1, \"timestamp\": 1, \"input_tokens\": 1, "
                         "\"output_tokens\": 1}\n"),
            "trace.csv:2:12: both \"timestamp\" and \"time_s\" given; use one");
  EXPECT_EQ(ErrorOf(ok + "{\"time_s\": \"soon\", \"input_tokens\": 1, \"output_tokens\": 1}\n"),
            "trace.csv:2:12: expected a number for \"time_s\" (seconds), got \"soon\"");
  EXPECT_NE(ErrorOf(ok + "{\"time_s\": -1, \"input_tokens\": 1, \"output_tokens\": 1}\n",
                    StatusCode::kOutOfRange)
                .find("trace.csv:2:12: \"time_s\" must be in [0"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ok + "  [1, 2]\n").find("trace.csv:2:3: expected one JSON object per line"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ok + "{\"time_s\": 1,\n")
                .find("trace.csv:2:1: expected one JSON object per "
                      "line: "),
            std::string::npos);
  EXPECT_EQ(ErrorOf(ok + "{\"time_s\": 1, \"input_tokens\": 1, \"output_tokens\": 1, "
                         "\"hash_ids\": [1, -2]}\n"),
            "trace.csv:2:66: expected \"hash_ids\" to hold non-negative integers, got -2");
  EXPECT_NE(
      ErrorOf(ok +
              "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
              "]]]]]]]]]]]]]]]]]]]]]]]\n")
          .find("trace.csv:2:1: expected one JSON object per line"),
      std::string::npos);
}

TEST(TraceFileTest, ReadTraceFileReadsARealFileAndNamesMissingOnes) {
  const std::string path = testing::TempDir() + "/trace_file_test.jsonl";
  {
    std::ofstream out(path);
    out << "{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 4}\n"
        << "{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 6}\n";
  }
  Result<std::vector<TraceRequest>> trace = ReadTraceFile(path);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  ASSERT_EQ(trace->size(), 2u);
  EXPECT_EQ((*trace)[1], (TraceRequest{10 * kMs, 5, 6, {}}));
  std::remove(path.c_str());

  Result<std::vector<TraceRequest>> missing = ReadTraceFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(path), std::string_view::npos);
}

}  // namespace
}  // namespace titan::load
