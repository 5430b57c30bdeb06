#include "src/load/openai.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace titan::load {
namespace {

TEST(OpenAiTest, BodiesAreValidJsonForEveryApi) {
  ApiOptions options;
  options.model = "m\"x";
  const std::string prompt = "say \"hi\"\n\tand \\ \x01 \xc3\xa9";
  for (Api api : {Api::kCompletions, Api::kChat, Api::kEmbeddings}) {
    options.api = api;
    nlohmann::json body = nlohmann::json::parse(BuildRequestBody(options, prompt, {}, 7));
    EXPECT_EQ(body["model"], "m\"x");
    if (api == Api::kCompletions) {
      EXPECT_EQ(body["prompt"], prompt);
      EXPECT_EQ(body["max_tokens"], 7);
      EXPECT_EQ(body["stream_options"]["include_usage"], true);
      EXPECT_EQ(body["ignore_eos"], true);
    } else if (api == Api::kChat) {
      EXPECT_EQ(body["messages"][0]["content"], prompt);
    } else {
      EXPECT_EQ(body["input"], prompt);
      EXPECT_FALSE(body.contains("stream"));
    }
  }
  options.api = Api::kChat;
  options.stream = false;
  options.extra_fields = "\"top_k\":1";
  nlohmann::json chat = nlohmann::json::parse(
      BuildRequestBody(options, "", {{"system", "be brief"}, {"user", "hi"}}, 3));
  EXPECT_EQ(chat["messages"].size(), 2u);
  EXPECT_EQ(chat["top_k"], 1);
  EXPECT_FALSE(chat.contains("stream"));
}

TEST(OpenAiTest, ExtraBodyIsCheckedBeforeTheRun) {
  // '"a":}' was sent as is: every request got a 400 and the run exited 0.
  ApiOptions options;
  auto error = [&](std::string_view text) {
    Status s = SetExtraFields(text, &options);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << text;
    return std::string(s.message());
  };
  EXPECT_NE(error("\"a\":}").find("is not JSON object members"), std::string::npos);
  EXPECT_NE(error("{\"a\":1}").find("without braces"), std::string::npos);
  EXPECT_NE(error("\"a\":1,\"a\":2").find("gives \"a\" twice"), std::string::npos);
  EXPECT_NE(error("\"max_tokens\":9").find("use --output-tokens"), std::string::npos);
  EXPECT_NE(error("\"stream\":false").find("use --no-stream"), std::string::npos);
  EXPECT_NE(error("\"temperature\":\"hot\"").find("temperature"), std::string::npos);
  EXPECT_NE(error(std::string(200, '[')).find("deeper than"), std::string::npos);
  ASSERT_TRUE(
      SetExtraFields(" \"top_k\" : 1, \"temperature\":0.5, \"stop\":[\"x\"] ", &options).ok());
  EXPECT_EQ(options.temperature, 0.5);
  nlohmann::json body = nlohmann::json::parse(BuildRequestBody(options, "p", {}, 3));
  EXPECT_EQ(body["top_k"], 1);
  EXPECT_EQ(body["temperature"], 0.5);
  EXPECT_EQ(body["stop"][0], "x");
  ASSERT_TRUE(SetExtraFields("", &options).ok());
  EXPECT_EQ(options.extra_fields, "");
}

TEST(OpenAiTest, ParsesChunksUsageAndTimings) {
  ResponseParser parser;
  ResponseInfo info;
  ASSERT_TRUE(
      parser.Parse(R"({"choices":[{"text":" a","index":0}]})", Api::kCompletions, &info).ok());
  EXPECT_TRUE(info.has_content);
  ASSERT_TRUE(parser
                  .Parse(R"({"choices":[{"delta":{"role":"assistant","content":null}}]})",
                         Api::kChat, &info)
                  .ok());
  EXPECT_FALSE(info.has_content);
  ASSERT_TRUE(parser
                  .Parse(R"({"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9},
                            "timings":{"prompt_ms":4.5,"predicted_per_token_ms":2.9,"cache_n":3}})",
                         Api::kChat, &info)
                  .ok());
  EXPECT_EQ(info.prompt_tokens, 5);
  EXPECT_EQ(info.completion_tokens, 9);
  EXPECT_DOUBLE_EQ(info.server_prompt_ms, 4.5);
  EXPECT_DOUBLE_EQ(info.server_predicted_per_token_ms, 2.9);
  EXPECT_EQ(info.server_cache_tokens, 3);
  EXPECT_EQ(parser.Parse("not json", Api::kCompletions, &info).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(parser.Parse("[1]", Api::kCompletions, &info).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parser.Parse(R"({"error":{"message":"overloaded"}})", Api::kCompletions, &info).code(),
            StatusCode::kDataLoss);
  std::string deep(100000, '[');
  EXPECT_FALSE(parser.Parse(deep, Api::kCompletions, &info).ok());
}

}  // namespace
}  // namespace titan::load
