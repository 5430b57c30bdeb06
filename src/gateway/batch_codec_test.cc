// Dynamic batching's codec: which requests share a key, the merged upstream body, and the split
// of upstream answers, among them real llama-server answers (embedding vectors cut to 4 values).
#include "src/gateway/batch_codec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "src/gateway/openai_request.h"

namespace titan::gateway {
namespace {

using nlohmann::json;

constexpr Endpoint kC = Endpoint::kCompletions;
constexpr Endpoint kE = Endpoint::kEmbeddings;

// llama-server (llama.cpp 80fb11a, tiny random model, --embeddings --pooling mean) answering
// POST /v1/embeddings {"model":"tiny","input":["hello world","the quick brown fox jumps"]}.
// Alone, "hello world" has 3 prompt tokens and "the quick brown fox jumps" 6.
constexpr std::string_view kLlamaEmbeddings2 =
    R"({"model":"tiny","object":"list","usage":{"prompt_tokens":9,"total_tokens":9},"data":[{"embedding":[-0.0014548262115567923,0.08239825069904327,0.004966166336089373,0.08566615730524063],"index":0,"object":"embedding"},{"embedding":[0.013272305950522423,-0.016584018245339394,-0.002413715235888958,0.01099465787410736],"index":1,"object":"embedding"}]})";
// ... and {"model":"tiny","input":"hello world"}: the first item above, alone.
constexpr std::string_view kLlamaEmbedding1 =
    R"({"model":"tiny","object":"list","usage":{"prompt_tokens":3,"total_tokens":3},"data":[{"embedding":[-0.0014548262115567923,0.08239825069904327,0.004966166336089373,0.08566615730524063],"index":0,"object":"embedding"}]})";
// ... and {"model":"tiny","input":["a","b c","d e f","g"]} (2 + 3 + 4 + 2 tokens).
constexpr std::string_view kLlamaEmbeddings4 =
    R"({"model":"tiny","object":"list","usage":{"prompt_tokens":11,"total_tokens":11},"data":[{"embedding":[0.10720596462488174,0.04178928956389427,0.017215963453054428,0.03322643041610718],"index":0,"object":"embedding"},{"embedding":[0.07279128581285477,0.03670218586921692,0.05713636800646782,-0.013479918241500854],"index":1,"object":"embedding"},{"embedding":[0.1191045269370079,-0.019625386223196983,0.02523037977516651,0.024080857634544373],"index":2,"object":"embedding"},{"embedding":[-0.013819620944559574,0.069839246571064,-0.013442469760775566,0.026716865599155426],"index":3,"object":"embedding"}]})";
// llama-server without --embeddings answering POST /v1/completions {"model":"tiny","prompt":
// ["hello world","the quick brown fox jumps"],"max_tokens":3,"temperature":0} (model path and
// timings shortened). Its usage is the first prompt's alone (3 + 3), not 9 + 6.
constexpr std::string_view kLlamaCompletions2 =
    R"({"choices":[{"text":" NCAA_ARGS_ARGS","index":0,"logprobs":null,"finish_reason":"length"},{"text":" Fur Fur Fur","index":1,"logprobs":null,"finish_reason":"length"}],"created":1796130216,"model":"/models/tiny-llama-9ea5cb299e876279.gguf","system_fingerprint":"b1-80fb11a","object":"text_completion","usage":{"completion_tokens":3,"prompt_tokens":3,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":0}},"id":"chatcmpl-96zWVeKLG7CwjEPZ5dffbuvNPZXPuop0","timings":{"cache_n":0,"prompt_n":3,"predicted_n":3}})";

json Parse(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

TEST(BatchKeyTest, EqualIffOnlyThePromptDiffers) {
  const auto a = BatchKey(kC, R"({"model":"m","prompt":"hello","max_tokens":3,"temperature":0})");
  const auto b = BatchKey(kC, R"({"temperature":0,"prompt":"other","max_tokens":3,"model":"m"})");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);  // key order does not matter
  EXPECT_EQ(*a, "completions\n{\"max_tokens\":3,\"model\":\"m\",\"temperature\":0}");
  // Nested objects are canonical too.
  EXPECT_EQ(BatchKey(kC, R"({"prompt":"x","o":{"b":[1,{"d":1,"c":2}],"a":null}})"),
            "completions\n{\"o\":{\"a\":null,\"b\":[1,{\"c\":2,\"d\":1}]}}");
  EXPECT_NE(*a, *BatchKey(kC, R"({"model":"m","prompt":"hello","max_tokens":4,"temperature":0})"));
  EXPECT_NE(*a, *BatchKey(kC, R"({"model":"m","prompt":"hello","max_tokens":3})"));
  // 1 and 1.0 are spelled differently: not batched together.
  EXPECT_NE(*BatchKey(kC, R"({"prompt":"x","t":1})"), *BatchKey(kC, R"({"prompt":"x","t":1.0})"));
  // The endpoint is part of the key.
  const auto e = BatchKey(kE, R"({"model":"m","input":"hello"})");
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, "embeddings\n{\"model\":\"m\"}");
  EXPECT_NE(*e, *BatchKey(kC, R"({"model":"m","prompt":"hello"})"));
  // Explicit stream false, n 1 and null extras are batchable.
  EXPECT_TRUE(BatchKey(kC, R"({"prompt":"x","stream":false,"n":1,"echo":null,"logprobs":null,
                              "best_of":null,"suffix":null})"));
  EXPECT_TRUE(BatchKey(kC, R"({"prompt":"x","stream":null,"n":null})"));
  // Embeddings may carry echo and the like: only completions forbid them.
  EXPECT_TRUE(BatchKey(kE, R"({"input":"x","echo":true,"dimensions":8})"));
}

TEST(BatchKeyTest, UnbatchableRequests) {
  struct Case {
    Endpoint endpoint;
    const char* body;
  };
  const Case cases[] = {
      {Endpoint::kChatCompletions, R"({"messages":[{"role":"user","content":"x"}]})"},
      {Endpoint::kOther, R"({"prompt":"x"})"},
      {kC, ""},
      {kC, "{"},
      {kC, R"(["prompt"])"},
      {kC, R"({"prompt":"x","stream":true})"},
      {kC, R"({"prompt":"x","stream":"no"})"},
      {kC, R"({"prompt":"x","n":2})"},
      {kC, R"({"prompt":"x","n":1.0})"},
      {kC, R"({"prompt":["x"]})"},
      {kC, R"({"prompt":["x","y"]})"},
      {kC, R"({"prompt":[1,2,3]})"},
      {kC, R"({"prompt":null})"},
      {kC, R"({"model":"m"})"},
      {kC, R"({"prompt":"x","echo":false})"},
      {kC, R"({"prompt":"x","logprobs":0})"},
      {kC, R"({"prompt":"x","best_of":1})"},
      {kC, R"({"prompt":"x","suffix":""})"},
      {kC, R"({"prompt":"x","prompt":"y"})"},
      {kC, R"({"prompt":"x","o":{"a":1,"a":2}})"},
      {kE, R"({"input":["x"]})"},
      {kE, R"({"input":[[1,2]]})"},
      {kE, R"({"input":5})"},
      {kE, R"({"prompt":"x"})"},
      {kE, R"({"input":"x","stream":true})"},
  };
  for (const Case& c : cases) EXPECT_EQ(BatchKey(c.endpoint, c.body), std::nullopt) << c.body;
  // Nesting beyond 64 levels.
  std::string deep = R"({"prompt":"x","d":)";
  deep += std::string(63, '[') + "1" + std::string(63, ']') + "}";
  EXPECT_TRUE(BatchKey(kC, deep));
  deep.insert(deep.find('['), "[");
  deep.insert(deep.rfind(']'), "]");
  EXPECT_EQ(BatchKey(kC, deep), std::nullopt);
}

TEST(MergeBodiesTest, ListsThePromptsInOrder) {
  const std::vector<std::string_view> bodies = {
      R"({"model":"tiny","prompt":"hello world","max_tokens":3,"temperature":0})",
      R"({"max_tokens":3,"prompt":"the \"quick\"\nbrown\u0001 fox","temperature":0,"model":"tiny"})",
      R"({"model":"tiny","temperature":0,"max_tokens":3,"prompt":"h\u00e9"})",
  };
  Result<std::string> merged = MergeBodies(kC, bodies);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  // The first body's fields in its order.
  EXPECT_EQ(*merged,
            "{\"model\":\"tiny\",\"prompt\":[\"hello world\",\"the \\\"quick\\\"\\nbrown\\u0001 "
            "fox\",\"h\xc3\xa9\"],\"max_tokens\":3,\"temperature\":0}");
  Result<RequestInfo> info = InspectRequest(kC, *merged, {}, nullptr);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->inputs, 3u);
  EXPECT_TRUE(info->prompt_is_list);
  EXPECT_EQ(info->prompt_text, "hello world\nthe \"quick\"\nbrown\x01 fox\nh\xc3\xa9");
  EXPECT_EQ(info->max_tokens, 3);
  // A merged body is a batch already.
  EXPECT_EQ(BatchKey(kC, *merged), std::nullopt);
  // One body: a list of one.
  merged = MergeBodies(kE, {R"({"input":"a","model":"e"})"});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(*merged, R"({"input":["a"],"model":"e"})");
}

TEST(MergeBodiesTest, Errors) {
  Result<std::string> r = MergeBodies(kC, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "no request bodies to merge");
  r = MergeBodies(kC, {R"({"prompt":"a"})", R"({"prompt":"b","stream":true})"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "request 1 of 2 cannot be batched for /v1/completions (see BatchKey)");
  r = MergeBodies(kE, {R"({"input":"a","model":"x"})", R"({"input":"b","model":"y"})"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "request 1 differs from request 0 in more than its input: they cannot share one "
            "upstream request");
  r = MergeBodies(Endpoint::kChatCompletions, {R"({"messages":[]})"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "request 0 of 1 cannot be batched for /v1/chat (see BatchKey)");
}

TEST(SplitResponseTest, RealLlamaServerEmbeddings) {
  // "hello world" is 11 bytes, "the quick brown fox jumps" 25: 9 tokens split 2 (floor of
  // 9 * 11 / 36) and 7.
  Result<std::vector<std::string>> r = SplitResponse(kE, kLlamaEmbeddings2, {11, 25});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  const json upstream = Parse(kLlamaEmbeddings2);
  for (size_t i = 0; i < 2; ++i) {
    const json a = Parse((*r)[i]);
    EXPECT_EQ(a["model"], "tiny");
    EXPECT_EQ(a["object"], "list");
    ASSERT_EQ(a["data"].size(), 1u);
    EXPECT_EQ(a["data"][0]["index"], 0);
    EXPECT_EQ(a["data"][0]["object"], "embedding");
    EXPECT_EQ(a["data"][0]["embedding"], upstream["data"][i]["embedding"]);
  }
  EXPECT_EQ(Parse((*r)[0])["usage"], json::parse(R"({"prompt_tokens":2,"total_tokens":2})"));
  EXPECT_EQ(Parse((*r)[1])["usage"], json::parse(R"({"prompt_tokens":7,"total_tokens":7})"));
  // The first member's answer is what llama-server answers to it alone, but for the apportioned
  // usage (2 here, 3 alone); the field order is kept.
  std::string alone(kLlamaEmbedding1);
  alone.replace(alone.find("\"prompt_tokens\":3,\"total_tokens\":3"),
                std::string_view("\"prompt_tokens\":3,\"total_tokens\":3").size(),
                "\"prompt_tokens\":2,\"total_tokens\":2");
  EXPECT_EQ((*r)[0], alone);

  r = SplitResponse(kE, kLlamaEmbeddings4, {1, 3, 5, 1});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  const json upstream4 = Parse(kLlamaEmbeddings4);
  int64_t prompt_sum = 0;
  const int64_t want_prompt[] = {1, 3, 5, 2};  // 11 * {1, 3, 5} / 10 floored, remainder 2
  for (size_t i = 0; i < 4; ++i) {
    const json a = Parse((*r)[i]);
    EXPECT_EQ(a["data"][0]["embedding"], upstream4["data"][i]["embedding"]);
    EXPECT_EQ(a["usage"]["prompt_tokens"], want_prompt[i]) << i;
    EXPECT_EQ(a["usage"]["total_tokens"], want_prompt[i]) << i;
    prompt_sum += a["usage"]["prompt_tokens"].get<int64_t>();
  }
  EXPECT_EQ(prompt_sum, 11);
}

TEST(SplitResponseTest, RealLlamaServerCompletions) {
  Result<std::vector<std::string>> r = SplitResponse(kC, kLlamaCompletions2, {11, 25});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  const json a = Parse((*r)[0]), b = Parse((*r)[1]);
  EXPECT_EQ(a["choices"], json::parse(R"([{"text":" NCAA_ARGS_ARGS","index":0,"logprobs":null,
                                            "finish_reason":"length"}])"));
  EXPECT_EQ(b["choices"], json::parse(R"([{"text":" Fur Fur Fur","index":0,"logprobs":null,
                                            "finish_reason":"length"}])"));
  for (const json* m : {&a, &b}) {
    EXPECT_EQ((*m)["id"], "chatcmpl-96zWVeKLG7CwjEPZ5dffbuvNPZXPuop0");
    EXPECT_EQ((*m)["object"], "text_completion");
    EXPECT_EQ((*m)["created"], 1796130216);
    EXPECT_EQ((*m)["model"], "/models/tiny-llama-9ea5cb299e876279.gguf");
    EXPECT_EQ((*m)["system_fingerprint"], "b1-80fb11a");
    EXPECT_EQ((*m)["timings"]["predicted_n"], 3);
    EXPECT_FALSE((*m)["usage"].contains("prompt_tokens_details"));
  }
  // prompt 3 by bytes: 0 and 3; completion 3 equally: 1 and 2.
  EXPECT_EQ(a["usage"],
            json::parse(R"({"completion_tokens":1,"prompt_tokens":0,"total_tokens":1})"));
  EXPECT_EQ(b["usage"],
            json::parse(R"({"completion_tokens":2,"prompt_tokens":3,"total_tokens":5})"));
  // The field order is llama-server's.
  EXPECT_TRUE((*r)[0].starts_with(R"({"choices":[{"text":" NCAA_ARGS_ARGS","index":0,)"));
  EXPECT_NE(
      (*r)[0].find(R"(,"usage":{"completion_tokens":1,"prompt_tokens":0,"total_tokens":1},"id":)"),
      std::string::npos);
}

TEST(SplitResponseTest, IndicesPlaceItems) {
  // Out of order, by index.
  Result<std::vector<std::string>> r = SplitResponse(
      kC, R"({"id":"x","choices":[{"index":1,"text":"B"},{"text":"A","index":0}]})", {1, 1});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0], R"({"id":"x","choices":[{"text":"A","index":0}]})");
  EXPECT_EQ((*r)[1], R"({"id":"x","choices":[{"index":0,"text":"B"}]})");
  // Without index (or with null): by position; the index is added.
  r = SplitResponse(kE, R"({"data":[{"embedding":[1]},{"index":null,"embedding":[2]},{}]})",
                    {1, 1, 1});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0], R"({"data":[{"embedding":[1],"index":0}]})");
  EXPECT_EQ((*r)[1], R"({"data":[{"index":0,"embedding":[2]}]})");
  EXPECT_EQ((*r)[2], R"({"data":[{"index":0}]})");
  // No usage: none in the answers; null usage stays null.
  r = SplitResponse(kE, R"({"data":[{"index":0}],"usage":null})", {0});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0], R"({"data":[{"index":0}],"usage":null})");
}

TEST(SplitResponseTest, UsageSplits) {
  // Per-choice completion counts win over the equal split.
  Result<std::vector<std::string>> r = SplitResponse(kC,
                                                     R"({"choices":[
        {"index":0,"text":"a","usage":{"completion_tokens":5}},
        {"index":1,"text":"b","usage":{"completion_tokens":1}}],
      "usage":{"prompt_tokens":10,"completion_tokens":6,"total_tokens":16}})",
                                                     {30, 10});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Parse((*r)[0])["usage"],
            json::parse(R"({"completion_tokens":5,"prompt_tokens":7,"total_tokens":12})"));
  EXPECT_EQ(Parse((*r)[1])["usage"],
            json::parse(R"({"completion_tokens":1,"prompt_tokens":3,"total_tokens":4})"));
  // One choice without a count: equal shares (7 = 2 + 2 + 3), prompt lengths all 0: equal too.
  r = SplitResponse(kC,
                    R"({"choices":[{"index":0,"usage":{"completion_tokens":5}},{"index":1},
                        {"index":2}],"usage":{"prompt_tokens":10,"completion_tokens":7}})",
                    {0, 0, 0});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const int64_t prompt[] = {3, 3, 4}, completion[] = {2, 2, 3};
  for (size_t i = 0; i < 3; ++i) {
    const json u = Parse((*r)[i])["usage"];
    EXPECT_EQ(u["prompt_tokens"], prompt[i]);
    EXPECT_EQ(u["completion_tokens"], completion[i]);
    EXPECT_EQ(u["total_tokens"], prompt[i] + completion[i]);
  }
  // Absent counts are 0; embeddings have no completion_tokens.
  r = SplitResponse(kE, R"({"data":[{"index":0}],"usage":{}})", {4});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0], R"({"data":[{"index":0}],"usage":{"prompt_tokens":0,"total_tokens":0}})");
  // Large counts do not overflow the apportioning.
  r = SplitResponse(kE, R"({"data":[{},{}],"usage":{"prompt_tokens":9223372036854775807}})",
                    {static_cast<size_t>(-1), static_cast<size_t>(-1)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Parse((*r)[0])["usage"]["prompt_tokens"], 4611686018427387903);
  EXPECT_EQ(Parse((*r)[1])["usage"]["prompt_tokens"], 4611686018427387904);
}

TEST(SplitResponseTest, ArrayFormOfOlderLlamaServers) {
  Result<std::vector<std::string>> r = SplitResponse(kC,
                                                     R"([
      {"choices":[{"text":"A","index":0,"finish_reason":"length"}],"id":"1",
       "usage":{"completion_tokens":3,"prompt_tokens":3,"total_tokens":6}},
      {"choices":[{"text":"B","index":1,"finish_reason":"length"}],"id":"2",
       "usage":{"completion_tokens":3,"prompt_tokens":6,"total_tokens":9}}])",
                                                     {11, 25});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(
      (*r)[0],
      R"({"choices":[{"text":"A","index":0,"finish_reason":"length"}],"id":"1","usage":{"completion_tokens":3,"prompt_tokens":3,"total_tokens":6}})");
  EXPECT_EQ(
      (*r)[1],
      R"({"choices":[{"text":"B","index":0,"finish_reason":"length"}],"id":"2","usage":{"completion_tokens":3,"prompt_tokens":6,"total_tokens":9}})");
  // Embeddings answers are never lists.
  r = SplitResponse(kE, R"([{"data":[{"index":0}]}])", {1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "the upstream answer must be a JSON object, not a list");
}

TEST(SplitResponseTest, Errors) {
  struct Case {
    Endpoint endpoint;
    const char* body;
    size_t count;
    const char* message;  // a prefix when it ends in ": "
  };
  const Case cases[] = {
      {kE, "", 1, "the upstream answer is not valid JSON: "},
      {kE, "{\"data\":", 1, "the upstream answer is not valid JSON: "},
      {kE, "{\"data\":[],\"x\":\"\xff\"}", 1, "the upstream answer is not valid UTF-8"},
      {kE, "5", 1, "the upstream answer must be a JSON object, not 5"},
      {kC, "\"x\"", 1, "the upstream answer must be a JSON object (or a list of them), not \"x\""},
      {kE, R"({"error":{"message":"boom"}})", 1, "the upstream answer has no \"data\" list"},
      {kC, R"({"choices":{}})", 1, "the upstream answer has no \"choices\" list"},
      {kE, R"({"data":[{"index":0}]})", 2,
       "the upstream answer has 1 items in \"data\" for 2 requests"},
      {kC, R"({"choices":[{},{},{}]})", 2,
       "the upstream answer has 3 items in \"choices\" for 2 requests"},
      {kE, R"({"data":[{"index":0},5]})", 2, "data[1] is not an object"},
      {kE, R"({"data":[{"index":0},{"index":2}]})", 2,
       "data[1].index is 2; expected an integer in [0, 2)"},
      {kC, R"({"choices":[{"index":-1},{"index":0}]})", 2,
       "choices[0].index is -1; expected an integer in [0, 2)"},
      {kC, R"({"choices":[{"index":"0"}]})", 1,
       "choices[0].index is \"0\"; expected an integer in [0, 1)"},
      {kC, R"({"choices":[{"index":0.0}]})", 1,
       "choices[0].index is 0.0; expected an integer in [0, 1)"},
      {kC, R"({"choices":[{"index":1},{"index":1}]})", 2, "choices[1].index 1 is repeated"},
      {kC, R"({"choices":[{"index":1},{}]})", 2, "choices[1].index 1 is repeated"},
      {kE, R"({"data":[{}],"usage":[]})", 1, "the upstream answer's usage is not an object"},
      {kE, R"({"data":[{}],"usage":{"prompt_tokens":-1}})", 1,
       "usage.prompt_tokens is -1; expected a non-negative integer"},
      {kC, R"({"choices":[{}],"usage":{"completion_tokens":"3"}})", 1,
       "usage.completion_tokens is \"3\"; expected a non-negative integer"},
      {kC,
       R"({"choices":[{}],"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":1}})", 1,
       "the upstream answer's usage counts are out of range"},
      {kC, R"([{"choices":[{}]}])", 2, "the upstream answer is a list of 1 answers for 2 requests"},
      {kC, R"([{"choices":[{}]},[]])", 2, "the upstream answer's item 1 is not an object"},
      {kC, R"([{"choices":[{}]},{"id":"x"}])", 2,
       "the upstream answer's item 1 has no \"choices\" list"},
      {kC, R"([{"choices":[{},{}]}])", 1,
       "the upstream answer's item 0 has 2 choices; expected one object"},
      {kC, R"([{"choices":[1]}])", 1,
       "the upstream answer's item 0 has 1 choices; expected one object"},
  };
  for (const Case& c : cases) {
    Result<std::vector<std::string>> r =
        SplitResponse(c.endpoint, c.body, std::vector<size_t>(c.count, 1));
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << c.body;
    const std::string_view want = c.message;
    if (want.ends_with(": ")) {
      EXPECT_TRUE(r.status().message().starts_with(want)) << r.status().message();
    } else {
      EXPECT_EQ(r.status().message(), want) << c.body;
    }
  }
  // Nesting: 64 levels pass, 65 do not.
  std::string deep =
      R"({"data":[{"x":)" + std::string(61, '[') + "1" + std::string(61, ']') + "}]}";
  EXPECT_TRUE(SplitResponse(kE, deep, {1}).ok());
  deep.insert(deep.find("[["), "[");
  deep.insert(deep.rfind("]]"), "]");
  Result<std::vector<std::string>> r = SplitResponse(kE, deep, {1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(), "the upstream answer is nested deeper than 64 levels");
  // The caller's mistakes.
  r = SplitResponse(kE, kLlamaEmbedding1, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  r = SplitResponse(Endpoint::kChatCompletions, kLlamaCompletions2, {1, 1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "/v1/chat answers are not batched");
}

// Merge, answer the merged request as an OpenAI-compatible server would, split: each member
// gets its own answer.
TEST(BatchRoundTripTest, MergeThenSplit) {
  const std::vector<std::string> prompts = {"hello world", "", "the quick brown fox jumps",
                                            "caf\xc3\xa9 \"au\" lait\n"};
  std::vector<std::string> bodies;
  for (const std::string& p : prompts) {
    bodies.push_back(json{{"model", "tiny"}, {"prompt", p}, {"max_tokens", 2}, {"seed", 7}}.dump());
  }
  std::vector<std::string_view> views(bodies.begin(), bodies.end());
  std::vector<size_t> prompt_bytes;
  for (const std::string& body : bodies) {
    ASSERT_EQ(BatchKey(kC, body), BatchKey(kC, bodies[0]));
    Result<RequestInfo> info = InspectRequest(kC, body, {}, nullptr);
    ASSERT_TRUE(info.ok());
    prompt_bytes.push_back(info->prompt_text.size());
  }
  Result<std::string> merged = MergeBodies(kC, views);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  const json request = Parse(*merged);
  ASSERT_EQ(request["prompt"].size(), prompts.size());
  // The upstream: one choice per prompt, in reverse order, echoing the prompt.
  json answer = {{"id", "cmpl-1"},
                 {"object", "text_completion"},
                 {"model", "tiny"},
                 {"choices", json::array()},
                 {"usage", {{"prompt_tokens", 40}, {"completion_tokens", 8}}}};
  for (size_t i = prompts.size(); i-- > 0;) {
    answer["choices"].push_back({{"index", i}, {"text", request["prompt"][i]}});
  }
  Result<std::vector<std::string>> split = SplitResponse(kC, answer.dump(), prompt_bytes);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ASSERT_EQ(split->size(), prompts.size());
  int64_t prompt_sum = 0, completion_sum = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const json a = Parse((*split)[i]);
    ASSERT_EQ(a["choices"].size(), 1u);
    EXPECT_EQ(a["choices"][0]["text"], prompts[i]);
    EXPECT_EQ(a["choices"][0]["index"], 0);
    EXPECT_EQ(a["id"], "cmpl-1");
    EXPECT_EQ(a["usage"]["completion_tokens"], 2);
    prompt_sum += a["usage"]["prompt_tokens"].get<int64_t>();
    completion_sum += a["usage"]["completion_tokens"].get<int64_t>();
  }
  EXPECT_EQ(prompt_sum, 40);
  EXPECT_EQ(completion_sum, 8);
  EXPECT_EQ(Parse((*split)[1])["usage"]["prompt_tokens"], 0);  // the empty prompt
}

}  // namespace
}  // namespace titan::gateway
