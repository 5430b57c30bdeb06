// The gateway's request inspector on good and bad bodies: what it reads, and errors that name
// the field.
#include "src/gateway/openai_request.h"

#include <gtest/gtest.h>

#include <string>

namespace titan::gateway {
namespace {

Result<RequestInfo> Inspect(Endpoint endpoint, std::string_view body, std::string* param = nullptr,
                            RequestLimits limits = {}) {
  return InspectRequest(endpoint, body, limits, param);
}

TEST(EndpointTest, PathsAndNames) {
  EXPECT_EQ(EndpointForPath("/v1/completions"), Endpoint::kCompletions);
  EXPECT_EQ(EndpointForPath("/v1/chat/completions"), Endpoint::kChatCompletions);
  EXPECT_EQ(EndpointForPath("/v1/embeddings"), Endpoint::kEmbeddings);
  EXPECT_EQ(EndpointForPath("/v1/embeddings?x=1"), Endpoint::kEmbeddings);
  EXPECT_EQ(EndpointForPath("/v1/models"), Endpoint::kOther);
  EXPECT_EQ(EndpointForPath("/v1/completions/"), Endpoint::kOther);
  EXPECT_EQ(EndpointForPath("/completions"), Endpoint::kOther);
  EXPECT_EQ(EndpointForPath(""), Endpoint::kOther);
  EXPECT_EQ(EndpointName(Endpoint::kCompletions), "completions");
  EXPECT_EQ(EndpointName(Endpoint::kChatCompletions), "chat");
  EXPECT_EQ(EndpointName(Endpoint::kEmbeddings), "embeddings");
  EXPECT_EQ(EndpointName(Endpoint::kOther), "other");
}

TEST(InspectRequestTest, CompletionFields) {
  std::string param = "untouched";
  Result<RequestInfo> r = Inspect(Endpoint::kCompletions,
                                  R"({"model":"m","prompt":"a b\nc","max_tokens":5,"stream":true,
          "stream_options":{"include_usage":true},"temperature":0.7,"n":2,"user":"alice",
          "tools":[{"x":[1,{"y":null}]}]})",
                                  &param);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(param, "untouched");
  EXPECT_EQ(r->endpoint, Endpoint::kCompletions);
  EXPECT_EQ(r->model, "m");
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_EQ(r->max_tokens, 5);
  EXPECT_EQ(r->n, 2);
  EXPECT_EQ(r->user, "alice");
  EXPECT_EQ(r->prompt_text, "a b\nc");
  EXPECT_EQ(r->prompt_token_ids, 0);
  EXPECT_EQ(r->inputs, 1u);
  EXPECT_FALSE(r->prompt_is_list);
}

TEST(InspectRequestTest, DefaultsAndNullsAreAbsent) {
  Result<RequestInfo> r = Inspect(Endpoint::kCompletions, R"({"prompt":""})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model, "");
  EXPECT_FALSE(r->stream);
  EXPECT_FALSE(r->include_usage);
  EXPECT_EQ(r->max_tokens, -1);
  EXPECT_EQ(r->n, 1);
  EXPECT_EQ(r->user, "");
  EXPECT_EQ(r->prompt_text, "");
  r = Inspect(Endpoint::kCompletions,
              R"({"prompt":"p","model":null,"stream":null,"stream_options":null,
                  "max_tokens":null,"n":null,"user":null})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_tokens, -1);
  EXPECT_EQ(r->n, 1);
  r = Inspect(Endpoint::kCompletions,
              R"({"prompt":"p","stream_options":{"include_usage":null},"max_tokens":16.0,
                  "n":3.0})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->include_usage);
  EXPECT_EQ(r->max_tokens, 16);
  EXPECT_EQ(r->n, 3);
  r = Inspect(Endpoint::kCompletions, R"({"prompt":"p","max_tokens":0})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_tokens, 0);
}

TEST(InspectRequestTest, CompletionPromptForms) {
  Result<RequestInfo> r = Inspect(Endpoint::kCompletions, R"({"prompt":["a","","b c"]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt_text, "a\n\nb c");
  EXPECT_EQ(r->inputs, 3u);
  EXPECT_TRUE(r->prompt_is_list);
  EXPECT_EQ(r->prompt_token_ids, 0);
  // One prompt of token ids.
  r = Inspect(Endpoint::kCompletions, R"({"prompt":[1,2,3,0]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt_text, "");
  EXPECT_EQ(r->prompt_token_ids, 4);
  EXPECT_EQ(r->inputs, 1u);
  EXPECT_FALSE(r->prompt_is_list);
  // Several prompts of token ids.
  r = Inspect(Endpoint::kCompletions, R"({"prompt":[[1,2],[3],[]]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt_text, "");
  EXPECT_EQ(r->prompt_token_ids, 3);
  EXPECT_EQ(r->inputs, 3u);
  EXPECT_TRUE(r->prompt_is_list);
}

TEST(InspectRequestTest, ChatJoinsTheContents) {
  Result<RequestInfo> r = Inspect(Endpoint::kChatCompletions,
                                  R"({"model":"llama","messages":[
        {"role":"system","content":"be brief"},
        {"role":"user","content":[{"type":"text","text":"hi"},
                                  {"type":"image_url","image_url":{"url":"data:..."}},
                                  {"type":"text","text":"there"}]},
        {"role":"assistant","content":null,"tool_calls":[]},
        {"role":"user"},
        {"role":"user","content":""}],
      "max_tokens":3,"max_completion_tokens":7,"user":"u1"})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->endpoint, Endpoint::kChatCompletions);
  EXPECT_EQ(r->model, "llama");
  EXPECT_EQ(r->prompt_text, "be brief\nhi\nthere\n");
  EXPECT_EQ(r->max_tokens, 7);  // max_completion_tokens wins
  EXPECT_EQ(r->user, "u1");
  EXPECT_EQ(r->inputs, 1u);
  EXPECT_FALSE(r->prompt_is_list);
  // max_tokens alone; max_completion_tokens only counts for chat.
  r = Inspect(Endpoint::kChatCompletions,
              R"({"messages":[{"role":"user","content":"x"}],"max_tokens":3})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_tokens, 3);
  r = Inspect(Endpoint::kCompletions, R"({"prompt":"x","max_completion_tokens":9})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->max_tokens, -1);
  r = Inspect(Endpoint::kCompletions, R"({"prompt":"x","max_completion_tokens":"junk"})");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

TEST(InspectRequestTest, EmbeddingInputForms) {
  Result<RequestInfo> r =
      Inspect(Endpoint::kEmbeddings, R"({"model":"e","input":"hello world","dimensions":8})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->endpoint, Endpoint::kEmbeddings);
  EXPECT_EQ(r->prompt_text, "hello world");
  EXPECT_EQ(r->inputs, 1u);
  EXPECT_FALSE(r->prompt_is_list);
  r = Inspect(Endpoint::kEmbeddings, R"({"input":["hello world","the quick brown fox"]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt_text, "hello world\nthe quick brown fox");
  EXPECT_EQ(r->inputs, 2u);
  EXPECT_TRUE(r->prompt_is_list);
  r = Inspect(Endpoint::kEmbeddings, R"({"input":[5,6]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt_token_ids, 2);
  EXPECT_EQ(r->inputs, 1u);
  r = Inspect(Endpoint::kEmbeddings, R"({"input":[[5,6],[7]]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->prompt_token_ids, 3);
  EXPECT_EQ(r->inputs, 2u);
  EXPECT_TRUE(r->prompt_is_list);
}

TEST(InspectRequestTest, MaxInputsBoundsLists) {
  RequestLimits limits;
  limits.max_inputs = 2;
  std::string param;
  EXPECT_TRUE(Inspect(Endpoint::kEmbeddings, R"({"input":["a","b"]})", &param, limits).ok());
  Result<RequestInfo> r =
      Inspect(Endpoint::kEmbeddings, R"({"input":["a","b","c"]})", &param, limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "input is a list of 3 items; at most 2 per request");
  EXPECT_EQ(param, "input");
  r = Inspect(Endpoint::kCompletions, R"({"prompt":[[1],[2],[3]]})", &param, limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "prompt is a list of 3 items; at most 2 per request");
  // One prompt of many token ids is one input.
  EXPECT_TRUE(Inspect(Endpoint::kCompletions, R"({"prompt":[1,2,3,4]})", &param, limits).ok());
}

TEST(InspectRequestTest, DepthIsBounded) {
  RequestLimits limits;
  limits.max_depth = 2;
  std::string param = "x";
  EXPECT_TRUE(Inspect(Endpoint::kCompletions, R"({"prompt":["a"]})", &param, limits).ok());
  Result<RequestInfo> r =
      Inspect(Endpoint::kCompletions, R"({"prompt":"a","x":[[1]]})", &param, limits);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "body is nested deeper than 2 levels");
  EXPECT_EQ(param, "");
  // The default bound, 32.
  std::string deep = R"({"prompt":"a","x":)";
  for (int i = 0; i < 31; ++i) deep += "[";
  deep += "1";
  for (int i = 0; i < 31; ++i) deep += "]";
  deep += "}";
  EXPECT_TRUE(Inspect(Endpoint::kCompletions, deep).ok());
  deep.insert(deep.find('['), "[");
  deep.insert(deep.rfind(']'), "]");
  r = Inspect(Endpoint::kCompletions, deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "body is nested deeper than 32 levels");
  // 0 counts as 1: only flat objects.
  limits.max_depth = 0;
  EXPECT_TRUE(Inspect(Endpoint::kCompletions, R"({"prompt":"a"})", &param, limits).ok());
  EXPECT_FALSE(Inspect(Endpoint::kCompletions, R"({"prompt":["a"]})", &param, limits).ok());
  // An empty list or object adds no level (simdjson's count).
  EXPECT_TRUE(Inspect(Endpoint::kCompletions, R"({"prompt":"a","x":[]})", &param, limits).ok());
}

TEST(InspectRequestTest, OtherEndpointsNeverFail) {
  std::string param = "untouched";
  for (std::string_view body : {"", "   ", "not json", "[1,2]", "\xff\xfe", "{\"model\":5}",
                                "{\"stream\":\"yes\"}", "{\"model\":null,\"stream\":null}"}) {
    Result<RequestInfo> r = Inspect(Endpoint::kOther, body, &param);
    ASSERT_TRUE(r.ok()) << body;
    EXPECT_EQ(r->endpoint, Endpoint::kOther);
    EXPECT_EQ(r->model, "");
    EXPECT_FALSE(r->stream);
  }
  EXPECT_EQ(param, "untouched");
  Result<RequestInfo> r =
      Inspect(Endpoint::kOther, R"({"model":"m","stream":true,"max_tokens":-5,"prompt":"p"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->model, "m");
  EXPECT_TRUE(r->stream);
  EXPECT_EQ(r->max_tokens, -1);
  EXPECT_EQ(r->prompt_text, "");
}

struct Bad {
  Endpoint endpoint;
  const char* body;
  const char* param;
  const char* message;
};

TEST(InspectRequestTest, BadBodiesNameTheField) {
  constexpr Endpoint kC = Endpoint::kCompletions;
  constexpr Endpoint kChat = Endpoint::kChatCompletions;
  constexpr Endpoint kE = Endpoint::kEmbeddings;
  const Bad cases[] = {
      {kC, "", "", "body is not valid JSON: Empty: no JSON found (send a JSON object)"},
      {kC, "{", "", "body is not valid JSON: "},
      {kC, "{\"prompt\":\"\xc3\x28\"}", "", "body is not valid UTF-8"},
      {kC, "[1]", "", "body must be a JSON object, got a list"},
      {kE, "\"text\"", "", "body must be a JSON object, got \"text\""},
      {kC, R"({"prompt":"x","model":7})", "model", "model must be a string, got 7"},
      {kC, R"({"prompt":"x","user":["a"]})", "user", "user must be a string, got a list"},
      {kC, R"({"prompt":"x","stream":"true"})", "stream",
       "stream must be true or false, got \"true\""},
      {kC, R"({"prompt":"x","stream_options":true})", "stream_options",
       "stream_options must be an object such as {\"include_usage\":true}, got true"},
      {kC, R"({"prompt":"x","stream_options":{"include_usage":1}})", "stream_options.include_usage",
       "stream_options.include_usage must be true or false, got 1"},
      {kC, R"({"prompt":"x","max_tokens":-3})", "max_tokens",
       "max_tokens must be a non-negative integer, got -3"},
      {kC, R"({"prompt":"x","max_tokens":1.5})", "max_tokens",
       "max_tokens must be a non-negative integer, got 1.5"},
      {kC, R"({"prompt":"x","max_tokens":"5"})", "max_tokens",
       "max_tokens must be a non-negative integer, got \"5\""},
      {kC, R"({"prompt":"x","max_tokens":18446744073709551615})", "max_tokens",
       "max_tokens must be a non-negative integer, got 18446744073709551615"},
      {kC, R"({"prompt":"x","max_tokens":1e300})", "max_tokens",
       "max_tokens must be a non-negative integer, got 1e+300"},
      {kChat, R"({"messages":[{"content":"x"}],"max_completion_tokens":-1})",
       "max_completion_tokens", "max_completion_tokens must be a non-negative integer, got -1"},
      {kC, R"({"prompt":"x","n":0})", "n", "n must be an integer >= 1, got 0"},
      // The gateway read the first copy and the replicas the last: limits were bypassed.
      {kC, R"({"prompt":"x","max_tokens":2,"max_tokens":5000})", "max_tokens",
       "key max_tokens is given twice: give each key once (replicas read the last "
       "copy, the gateway's limits the first)"},
      {kChat, R"({"messages":[{"role":"user","content":"x","content":"long"}]})",
       "messages[0].content",
       "key messages[0].content is given twice: give each key once (replicas read the "
       "last copy, the gateway's limits the first)"},
      {kC, R"({"prompt":"x","stream_options":{"include_usage":true,"include_usage":false}})",
       "stream_options.include_usage",
       "key stream_options.include_usage is given twice: give each key once (replicas "
       "read the last copy, the gateway's limits the first)"},
      {kE, R"({"input":"x","n":{}})", "n", "n must be an integer >= 1, got an object"},
      {kC, R"({"model":"m"})", "prompt", "prompt is required"},
      {kC, R"({"prompt":null})", "prompt", "prompt is required"},
      {kE, R"({"model":"m"})", "input", "input is required"},
      {kC, R"({"prompt":5})", "prompt",
       "prompt must be a string, a non-empty list of strings, a list of token ids (non-negative "
       "integers) or a non-empty list of token-id lists, got 5"},
      {kE, R"({"input":[]})", "input",
       "input must be a string, a non-empty list of strings, a list of token ids (non-negative "
       "integers) or a non-empty list of token-id lists, got an empty list"},
      {kE, R"({"input":[true]})", "input",
       "input must be a string, a non-empty list of strings, a list of token ids (non-negative "
       "integers) or a non-empty list of token-id lists, got a list of true"},
      {kC, R"({"prompt":[-1]})", "prompt",
       "prompt must be a string, a non-empty list of strings, a list of token ids (non-negative "
       "integers) or a non-empty list of token-id lists, got a list of -1"},
      {kC, R"({"prompt":["a",1]})", "prompt",
       "prompt[1] must be a string like the first item, got 1"},
      {kC, R"({"prompt":[1,"a"]})", "prompt",
       "prompt[1] must be a token id (a non-negative integer) like the first item, got \"a\""},
      {kC, R"({"prompt":[1,2.5]})", "prompt",
       "prompt[1] must be a token id (a non-negative integer) like the first item, got 2.5"},
      {kC, R"({"prompt":[[1],"a"]})", "prompt",
       "prompt[1] must be a list of token ids like the first item, got \"a\""},
      {kE, R"({"input":[[1],[2,-7]]})", "input",
       "input[1] must hold token ids (non-negative integers), got -7"},
      {kChat, R"({"model":"m"})", "messages", "messages must be a non-empty list (it is required)"},
      {kChat, R"({"messages":null})", "messages",
       "messages must be a non-empty list (it is required)"},
      {kChat, R"({"messages":"hi"})", "messages",
       "messages must be a non-empty list of objects, got \"hi\""},
      {kChat, R"({"messages":[]})", "messages", "messages must be a non-empty list, got []"},
      {kChat, R"({"messages":[{"content":"a"},"b"]})", "messages[1]",
       "messages[1] must be an object with \"role\" and \"content\", got \"b\""},
      {kChat, R"({"messages":[{"content":3}]})", "messages[0].content",
       "messages[0].content must be a string, a list of parts or null, got 3"},
      {kChat, R"({"messages":[{"content":["x"]}]})", "messages[0].content",
       "messages[0].content[0] must be an object such as {\"type\":\"text\",\"text\":\"...\"}, "
       "got \"x\""},
      {kChat, R"({"messages":[{"content":[{"type":"text"}]}]})", "messages[0].content",
       "messages[0].content[0].text must be a string, got nothing"},
      {kChat, R"({"messages":[{"content":[{"type":"text","text":1}]}]})", "messages[0].content",
       "messages[0].content[0].text must be a string, got 1"},
  };
  for (const Bad& c : cases) {
    std::string param = "unset";
    Result<RequestInfo> r = Inspect(c.endpoint, c.body, &param);
    ASSERT_FALSE(r.ok()) << c.body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(param, c.param) << c.body;
    const std::string_view message = r.status().message();
    if (std::string_view(c.message).ends_with(": ")) {  // simdjson's reason follows
      EXPECT_TRUE(message.starts_with(c.message)) << message;
      EXPECT_TRUE(message.ends_with("(send a JSON object)")) << message;
    } else {
      EXPECT_EQ(message, c.message) << c.body;
    }
    // No param pointer: the same error.
    Result<RequestInfo> again = Inspect(c.endpoint, c.body, nullptr);
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.status().message(), message);
  }
}

TEST(InspectRequestTest, LongValuesAreCutInMessages) {
  std::string param;
  // A string of 60 two-byte characters: cut at 40 bytes, not inside a character.
  std::string value;
  for (int i = 0; i < 60; ++i) value += "\xc3\xa9";
  Result<RequestInfo> r = Inspect(Endpoint::kCompletions,
                                  R"({"prompt":"x","model":[],"user":")" + value + "\"}", &param);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(param, "model");  // fields are checked in a fixed order
  r = Inspect(Endpoint::kCompletions, R"({"prompt":"x","max_tokens":")" + value + "\"}", &param);
  ASSERT_FALSE(r.ok());
  const std::string want =
      "max_tokens must be a non-negative integer, got \"" + value.substr(0, 38) + "...";
  EXPECT_EQ(r.status().message(), want);
}

}  // namespace
}  // namespace titan::gateway
