#include "src/http/sse.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace titan::http {
namespace {

std::vector<std::string> ParseAll(std::string_view stream, size_t piece, SseParser* parser) {
  std::vector<std::string> events;
  for (size_t i = 0; i < stream.size(); i += piece) {
    Status s = parser->Feed(stream.substr(i, piece),
                            [&](const SseEvent& e) { events.emplace_back(e.data); });
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  return events;
}

TEST(SseParserTest, OpenAiStreamInAnySplit) {
  const std::string stream =
      "data: {\"choices\":[{\"text\":\"a\"}]}\n\n"
      ": keep-alive comment\n\n"
      "data: {\"choices\":[{\"text\":\"b\"}]}\r\n\r\n"
      "data:[DONE]\r\r";
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    SseParser parser;
    auto events = ParseAll(stream, piece, &parser);
    ASSERT_EQ(events.size(), 3u) << "piece " << piece;
    EXPECT_EQ(events[0], "{\"choices\":[{\"text\":\"a\"}]}");
    EXPECT_EQ(events[1], "{\"choices\":[{\"text\":\"b\"}]}");
    EXPECT_EQ(events[2], "[DONE]");
    EXPECT_FALSE(parser.has_partial_event());
  }
}

TEST(SseParserTest, MultiLineDataAndFields) {
  SseParser parser;
  std::vector<SseEvent> seen;
  std::vector<std::string> data, names;
  ASSERT_TRUE(parser
                  .Feed("event: delta\nid: 7\ndata: one\ndata: two\n\nevent: empty\n\n",
                        [&](const SseEvent& e) {
                          data.emplace_back(e.data);
                          names.emplace_back(e.event);
                        })
                  .ok());
  ASSERT_EQ(data.size(), 1u);  // the event without data is not dispatched
  EXPECT_EQ(data[0], "one\ntwo");
  EXPECT_EQ(names[0], "delta");
}

TEST(SseParserTest, CutStreamLeavesAPartialEvent) {
  SseParser parser;
  int events = 0;
  ASSERT_TRUE(
      parser.Feed("data: {\"a\":1}\n\ndata: {\"b\"", [&](const SseEvent&) { ++events; }).ok());
  EXPECT_EQ(events, 1);
  EXPECT_TRUE(parser.has_partial_event());
}

TEST(SseParserTest, OverlongLineFailsInsteadOfGrowing) {
  SseParser parser(1024);
  std::string big = "data: " + std::string(2000, 'x');
  Status s = parser.Feed(big, [](const SseEvent&) {});
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("1024"), std::string_view::npos);
  // Sticky: later bytes are refused too.
  EXPECT_FALSE(parser.Feed("\n\n", [](const SseEvent&) {}).ok());
  // Also when the line arrives in small pieces, and when many data lines add up.
  SseParser pieces(1024);
  Status last;
  for (int i = 0; i < 300 && last.ok(); ++i) last = pieces.Feed("xxxxxxxx", [](const SseEvent&) {});
  EXPECT_FALSE(last.ok());
  SseParser lines(1024);
  last = OkStatus();
  for (int i = 0; i < 300 && last.ok(); ++i) {
    last = lines.Feed("data: xxxxxxxx\n", [](const SseEvent&) {});
  }
  EXPECT_FALSE(last.ok());
}

}  // namespace
}  // namespace titan::http
