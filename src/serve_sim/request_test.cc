// The request parsers on good and bad bodies: errors name the field.
#include "src/serve_sim/request.h"

#include <gtest/gtest.h>

#include "src/base/clock.h"

namespace titan::serve_sim {
namespace {

TEST(RequestTest, CompletionFields) {
  std::string param;
  Result<GenerateRequest> r = ParseGenerateRequest(
      R"({"model":"m","prompt":"a b  c\nd","max_tokens":5,"stream":true,
          "stream_options":{"include_usage":true},"temperature":0.7,"n":1,"seed":-3})",
      false, {}, &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model, "m");
  EXPECT_EQ(r->prompt.count, 4);
  EXPECT_EQ(r->max_tokens, 5);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->seed, static_cast<uint64_t>(-3));
  // A list of one string, nulls as absent, the default max_tokens.
  r = ParseGenerateRequest(R"({"prompt":["x y"],"max_tokens":null,"stream":null})", false, {},
                           &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt.count, 2);
  EXPECT_EQ(r->max_tokens, 16);
  EXPECT_FALSE(r->stream);
}

TEST(RequestTest, ChatJoinsTheContents) {
  std::string param;
  Result<GenerateRequest> r = ParseGenerateRequest(
      R"({"messages":[{"role":"system","content":"be brief"},
                      {"role":"user","content":[{"type":"text","text":"hi there"}]},
                      {"role":"assistant","content":null}],
          "max_completion_tokens":7,"max_tokens":3})",
      true, {}, &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt.count, 4);
  EXPECT_EQ(r->max_tokens, 7);
}

struct Bad {
  const char* body;
  bool chat;
  const char* param;
  const char* words;  // in the message
};

TEST(RequestTest, BadBodiesNameTheField) {
  const Bad cases[] = {
      {"{", false, "", "not valid JSON"},
      {"[1]", false, "", "JSON object"},
      {R"({"prompt":"x","max_tokens":"5"})", false, "max_tokens", "integer"},
      {R"({"prompt":"x","max_tokens":0})", false, "max_tokens", "[1, 1000000]"},
      {R"({"prompt":"x","max_tokens":2000000})", false, "max_tokens", "[1, 1000000]"},
      {R"({"prompt":"x","max_tokens":1.5})", false, "max_tokens", "integer"},
      {R"({"prompt":"x","max_tokens":9000})", false, "max_tokens", "maximum context length"},
      {R"({"prompt":"x","n":2})", false, "n", "must be 1"},
      {R"({"prompt":"x","stream":"yes"})", false, "stream", "boolean"},
      {R"({"prompt":["a","b"]})", false, "prompt", "exactly one"},
      {R"({"prompt":[1]})", false, "prompt", "token-id"},
      {R"({"max_tokens":3})", false, "prompt", "required"},
      {R"({"prompt":"x","stream_options":3})", false, "stream_options", "object"},
      {R"({"messages":[]})", true, "messages", "empty"},
      {R"({"messages":[{"content":"x"}]})", true, "messages[0].role", "required"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", true,
       "messages[0].content", "only text"},
      {R"({"prompt":"x"})", true, "messages", "required"},
  };
  for (const Bad& c : cases) {
    std::string param = "unset";
    Result<GenerateRequest> r = ParseGenerateRequest(c.body, c.chat, {}, &param);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(param, c.param) << c.body;
    EXPECT_NE(r.status().message().find(c.words), std::string_view::npos)
        << c.body << " -> " << r.status().message();
  }
}

TEST(RequestTest, PromptOverTheContextNamesThePrompt) {
  std::string prompt;
  for (int i = 0; i < 9000; ++i) prompt += "w ";
  std::string param;
  Result<GenerateRequest> r =
      ParseGenerateRequest("{\"prompt\":\"" + prompt + "\"}", false, {}, &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(param, "prompt");
}

TEST(RequestTest, DeepNestingIsRefused) {
  std::string body =
      "{\"prompt\":\"x\",\"extra\":" + std::string(5000, '[') + std::string(5000, ']') + "}";
  std::string param;
  Result<GenerateRequest> r = ParseGenerateRequest(body, false, {}, &param);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nested deeper"), std::string_view::npos)
      << r.status().message();
}

TEST(RequestTest, Embeddings) {
  std::string param;
  Result<EmbeddingRequest> r =
      ParseEmbeddingRequest(R"({"input":["a b","c"],"model":"e"})", {}, &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->total_tokens, 3);
  EXPECT_EQ(r->input_tokens, (std::vector<int64_t>{2, 1}));
  EXPECT_NE(r->input_hashes[0], r->input_hashes[1]);
  EXPECT_FALSE(ParseEmbeddingRequest(R"({"input":[]})", {}, &param).ok());
  EXPECT_EQ(param, "input");
  EXPECT_FALSE(
      ParseEmbeddingRequest(R"({"input":"x","encoding_format":"base64"})", {}, &param).ok());
  EXPECT_EQ(param, "encoding_format");
}

TEST(RequestTest, TokenizeAcceptsVllmAndLlamaCppShapes) {
  std::string param;
  EXPECT_EQ(*ParseTokenizeRequest(R"({"prompt":"a b"})", {}, &param), "a b");
  EXPECT_EQ(*ParseTokenizeRequest(R"({"content":"c d"})", {}, &param), "c d");
  EXPECT_EQ(*ParseTokenizeRequest(R"({"messages":[{"role":"user","content":"e"}]})", {}, &param),
            "e");
  EXPECT_FALSE(ParseTokenizeRequest(R"({"text":"x"})", {}, &param).ok());
}

TEST(RequestTest, AdminFaults) {
  std::string param;
  Result<AdminFault> f = ParseAdminFault(R"({"stall":"300ms","slow":5,"error_rate":0.1})", &param);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*f->stall_ns, 300 * kNsPerMs);
  EXPECT_EQ(*f->slow, 5);
  EXPECT_EQ(*f->error_rate, 0.1);
  EXPECT_FALSE(f->crash);
  EXPECT_EQ(*ParseAdminFault(R"({"stall":1.5})", &param)->stall_ns, 1500 * kNsPerMs);
  EXPECT_TRUE(ParseAdminFault(R"({"crash":true})", &param)->crash);
  EXPECT_FALSE(ParseAdminFault(R"({"stal":"1s"})", &param).ok());
  EXPECT_EQ(param, "stal");
  EXPECT_FALSE(ParseAdminFault(R"({"slow":0})", &param).ok());
  EXPECT_FALSE(ParseAdminFault(R"({"error_rate":2})", &param).ok());
  EXPECT_FALSE(ParseAdminFault("{}", &param).ok());
}

TEST(RequestTest, FaultSpecs) {
  Result<FaultSpec> f = ParseFaultSpec("stall=2s@10s");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->kind, FaultSpec::Kind::kStall);
  EXPECT_EQ(f->duration_ns, 2 * kNsPerSecond);
  EXPECT_EQ(f->at_ns, 10 * kNsPerSecond);
  f = ParseFaultSpec("slow=5@20s");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->value, 5);
  f = ParseFaultSpec("error-rate=0.05");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, FaultSpec::Kind::kErrorRate);
  EXPECT_EQ(f->at_ns, 0);
  f = ParseFaultSpec("crash@30s");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, FaultSpec::Kind::kCrash);
  for (const char* bad : {"crash", "stall=@1s", "stall=2s@x", "slow=0@1s", "slow=abc",
                          "error-rate=1.5", "boom@1s", ""}) {
    EXPECT_FALSE(ParseFaultSpec(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace titan::serve_sim
