// serve-sim in-process on an ephemeral port, driven over real loopback sockets by titan's own
// HTTP client and SSE parser. No timing upper bounds: only "at least" assertions.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/http/client.h"
#include "src/http/sse.h"
#include "src/serve_sim/server.h"
#include "src/serve_sim/tokenizer.h"

namespace titan::serve_sim {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using nlohmann::json;

struct Reply : http::ResponseObserver {
  int status = 0;
  http::Headers headers;
  std::string body;
  void OnHead(int s, const http::Headers& h, int64_t) override {
    status = s;
    headers = h;
  }
  bool OnBody(std::string_view data, int64_t) override {
    body.append(data);
    return true;
  }
};

// Collects SSE events with the time each arrived; stops after `stop_after` events if set.
struct Events : http::ResponseObserver {
  int status = 0;
  http::SseParser parser;
  std::vector<std::string> data;
  std::vector<int64_t> times;
  size_t stop_after = 0;
  std::function<void(size_t)> on_event;
  void OnHead(int s, const http::Headers&, int64_t) override { status = s; }
  bool OnBody(std::string_view bytes, int64_t now) override {
    Status st = parser.Feed(bytes, [&](const http::SseEvent& e) {
      data.emplace_back(e.data);
      times.push_back(now);
      if (on_event) on_event(data.size());
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return stop_after == 0 || data.size() < stop_after;
  }
};

ServeSimOptions Fast() {
  ServeSimOptions options;
  options.engine.itl_base_ns = kNsPerMs;
  options.engine.prefill_overhead_ns = kNsPerMs;
  options.engine.prefill_per_token_ns = kNsPerUs;
  return options;
}

std::unique_ptr<ServeSim> Start(ServeSimOptions options) {
  auto server = ServeSim::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

tcp::endpoint Local(int port) { return {asio::ip::make_address("127.0.0.1"), (uint16_t)port}; }

template <typename F>
auto RunClient(F body) {
  asio::io_context context;
  auto future = asio::co_spawn(context, body(context.get_executor()), asio::use_future);
  context.run();
  return future.get();
}

http::OutgoingRequest Post(std::string target, std::string body) {
  http::OutgoingRequest r;
  r.method = "POST";
  r.target = std::move(target);
  r.host = "127.0.0.1";
  r.headers = {{"Content-Type", "application/json"}};
  r.body = std::move(body);
  return r;
}

http::OutgoingRequest Get(std::string target) {
  http::OutgoingRequest r;
  r.method = "GET";
  r.target = std::move(target);
  r.host = "127.0.0.1";
  return r;
}

// One request on a fresh connection.
asio::awaitable<http::ClientResult> Send(asio::any_io_executor ex, int port,
                                         http::OutgoingRequest request,
                                         http::ResponseObserver& observer) {
  http::ClientConnection c(ex);
  http::ClientResult r = co_await c.Connect(Local(port), 2 * kNsPerSecond);
  if (!r.ok()) co_return r;
  const int64_t deadline = MonoNowNs() + 30 * kNsPerSecond;
  co_return co_await c.Send(request, observer, deadline);
}

Reply Call(int port, http::OutgoingRequest request) {
  return RunClient([&](asio::any_io_executor ex) -> asio::awaitable<Reply> {
    Reply reply;
    http::ClientResult r = co_await Send(ex, port, request, reply);
    EXPECT_TRUE(r.ok()) << r.message;
    co_return reply;
  });
}

Events Stream(int port, http::OutgoingRequest request) {
  return RunClient([&](asio::any_io_executor ex) -> asio::awaitable<Events> {
    Events events;
    http::ClientResult r = co_await Send(ex, port, request, events);
    EXPECT_TRUE(r.ok()) << r.message;
    co_return events;
  });
}

// Runs Send in the background; the observer is kept alive by the coroutine; *done_count is
// incremented at the end (it must outlive the exchange).
void SendInBackground(asio::any_io_executor ex, int port, http::OutgoingRequest request,
                      std::shared_ptr<http::ResponseObserver> observer,
                      std::shared_ptr<int> done_count) {
  auto run = [](asio::any_io_executor ex, int port, http::OutgoingRequest request,
                std::shared_ptr<http::ResponseObserver> observer,
                std::shared_ptr<int> done_count) -> asio::awaitable<void> {
    co_await Send(ex, port, std::move(request), *observer);
    ++*done_count;
  };
  asio::co_spawn(ex, run(ex, port, std::move(request), std::move(observer), std::move(done_count)),
                 asio::detached);
}

asio::awaitable<void> Sleep(asio::any_io_executor ex, int64_t ms) {
  asio::steady_timer t(ex, std::chrono::milliseconds(ms));
  co_await t.async_wait(asio::use_awaitable);
}

std::string Words(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "word" + std::to_string(i) + " ";
  return s;
}

TEST(ServeSimTest, StreamingCompletionHasNChunksThenUsageThenDone) {
  auto server = Start(Fast());
  std::string body = json{{"model", "m1"},
                          {"prompt", "the quick brown fox"},
                          {"max_tokens", 5},
                          {"stream", true},
                          {"stream_options", {{"include_usage", true}}}}
                         .dump();
  Events events = Stream(server->port(), Post("/v1/completions", body));
  EXPECT_EQ(events.status, 200);
  ASSERT_EQ(events.data.size(), 7u);  // 5 tokens, usage, [DONE]
  std::string text;
  for (int i = 0; i < 5; ++i) {
    json chunk = json::parse(events.data[i]);
    EXPECT_EQ(chunk["object"], "text_completion");
    EXPECT_EQ(chunk["model"], "m1");
    EXPECT_TRUE(chunk["id"].get<std::string>().starts_with("cmpl-"));
    const std::string piece = chunk["choices"][0]["text"];
    EXPECT_EQ(piece[0], ' ');
    text += piece;
    if (i < 4) {
      EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
    } else {
      EXPECT_EQ(chunk["choices"][0]["finish_reason"], "length");
    }
  }
  EXPECT_EQ(CountTokens(text), 5);
  json usage = json::parse(events.data[5]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
  EXPECT_EQ(usage["usage"]["total_tokens"], 9);
  EXPECT_EQ(events.data[6], "[DONE]");
}

TEST(ServeSimTest, ChatStreamsDeltasAndTheFirstCarriesTheRole) {
  auto server = Start(Fast());
  std::string body = json{
      {"messages",
       {{{"role", "system"}, {"content", "be brief"}},
        {{"role", "user"}, {"content", "hello there"}}}},
      {"max_tokens", 3},
      {"stream", true}}.dump();
  Events events = Stream(server->port(), Post("/v1/chat/completions", body));
  ASSERT_EQ(events.data.size(), 4u);  // no usage chunk unless asked
  for (int i = 0; i < 3; ++i) {
    json chunk = json::parse(events.data[i]);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    EXPECT_EQ(chunk["model"], "titan-sim");  // none asked: the server's
    EXPECT_TRUE(chunk["id"].get<std::string>().starts_with("chatcmpl-"));
    const json& delta = chunk["choices"][0]["delta"];
    EXPECT_EQ(delta.contains("role"), i == 0);
    if (i == 0) {
      EXPECT_EQ(delta["role"], "assistant");
    }
    EXPECT_EQ(delta["content"].get<std::string>()[0], ' ');
  }
  EXPECT_EQ(events.data[3], "[DONE]");
}

TEST(ServeSimTest, NonStreamingAnswersCarryUsage) {
  auto server = Start(Fast());
  Reply completion =
      Call(server->port(), Post("/v1/completions", R"({"prompt":"a b c","max_tokens":4})"));
  ASSERT_EQ(completion.status, 200) << completion.body;
  json c = json::parse(completion.body);
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(CountTokens(c["choices"][0]["text"].get<std::string>()), 4);
  EXPECT_EQ(c["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(c["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(c["usage"]["completion_tokens"], 4);
  EXPECT_EQ(c["usage"]["total_tokens"], 7);

  Reply chat = Call(server->port(), Post("/v1/chat/completions",
                                         R"({"messages":[{"role":"user","content":"x y"}],
                                             "max_tokens":2,"model":"mine"})"));
  ASSERT_EQ(chat.status, 200) << chat.body;
  json m = json::parse(chat.body);
  EXPECT_EQ(m["object"], "chat.completion");
  EXPECT_EQ(m["model"], "mine");
  EXPECT_EQ(m["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(CountTokens(m["choices"][0]["message"]["content"].get<std::string>()), 2);
  EXPECT_EQ(m["usage"]["prompt_tokens"], 2);
}

TEST(ServeSimTest, SameSeedSameText) {
  auto server = Start(Fast());
  const std::string body = R"({"prompt":"a","max_tokens":8,"seed":42})";
  Reply a = Call(server->port(), Post("/v1/completions", body));
  Reply b = Call(server->port(), Post("/v1/completions", body));
  EXPECT_EQ(json::parse(a.body)["choices"][0]["text"], json::parse(b.body)["choices"][0]["text"]);
}

TEST(ServeSimTest, EmbeddingsAreUnitVectors) {
  ServeSimOptions options = Fast();
  options.embedding_dim = 16;
  auto server = Start(options);
  Reply reply =
      Call(server->port(), Post("/v1/embeddings", R"({"input":["one two","three"],"model":"e5"})"));
  ASSERT_EQ(reply.status, 200) << reply.body;
  json e = json::parse(reply.body);
  ASSERT_EQ(e["data"].size(), 2u);
  for (const json& item : e["data"]) {
    ASSERT_EQ(item["embedding"].size(), 16u);
    double norm = 0;
    for (double v : item["embedding"]) norm += v * v;
    EXPECT_NEAR(norm, 1.0, 1e-4);
  }
  EXPECT_NE(e["data"][0]["embedding"], e["data"][1]["embedding"]);
  EXPECT_EQ(e["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(e["model"], "e5");
  // Same input, same vector.
  Reply again = Call(server->port(), Post("/v1/embeddings", R"({"input":"three"})"));
  EXPECT_EQ(json::parse(again.body)["data"][0]["embedding"], e["data"][1]["embedding"]);
}

TEST(ServeSimTest, TokenizeAgreesWithUsage) {
  auto server = Start(Fast());
  const std::string prompt = "  Hello,   world!\n\tThis is\ta test.  ";
  Reply tokens = Call(server->port(), Post("/tokenize", json{{"prompt", prompt}}.dump()));
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  json t = json::parse(tokens.body);
  EXPECT_EQ(t["count"], 6);
  EXPECT_EQ(t["tokens"].size(), 6u);
  Reply llama = Call(server->port(), Post("/tokenize", json{{"content", prompt}}.dump()));
  EXPECT_EQ(json::parse(llama.body)["tokens"], t["tokens"]);
  Reply completion = Call(
      server->port(), Post("/v1/completions", json{{"prompt", prompt}, {"max_tokens", 1}}.dump()));
  EXPECT_EQ(json::parse(completion.body)["usage"]["prompt_tokens"], t["count"]);
}

TEST(ServeSimTest, MetricsHaveTheVllmNames) {
  auto server = Start(Fast());
  Call(server->port(), Post("/v1/completions", R"({"prompt":"a b c","max_tokens":5})"));
  Reply metrics = Call(server->port(), Get("/metrics"));
  ASSERT_EQ(metrics.status, 200);
  for (const char* line : {
           "vllm:num_requests_running{model_name=\"titan-sim\"} 0",
           "vllm:num_requests_waiting{model_name=\"titan-sim\"} 0",
           "vllm:kv_cache_usage_perc{model_name=\"titan-sim\"} 0",
           "vllm:prompt_tokens_total{model_name=\"titan-sim\"} 3",
           "vllm:generation_tokens_total{model_name=\"titan-sim\"} 5",
           "vllm:num_preemptions_total{model_name=\"titan-sim\"} 0",
           "vllm:prefix_cache_queries_total{model_name=\"titan-sim\"} 3",
           "vllm:prefix_cache_hits_total{model_name=\"titan-sim\"} 0",
           "vllm:request_success_total{model_name=\"titan-sim\",finished_reason=\"length\"} 1",
           "# TYPE vllm:time_to_first_token_seconds gauge",
           "vllm:time_to_first_token_seconds_samples_count{model_name=\"titan-sim\"} 1",
           "# TYPE vllm:inter_token_latency_seconds gauge",
       }) {
    EXPECT_NE(metrics.body.find(line), std::string::npos) << line << "\n" << metrics.body;
  }
}

TEST(ServeSimTest, AFullQueueAnswers429WithRetryAfter) {
  ServeSimOptions options = Fast();
  options.engine.max_num_seqs = 1;
  options.engine.max_waiting = 1;
  options.engine.itl_base_ns = 20 * kNsPerMs;
  auto server = Start(options);
  const int port = server->port();
  auto a = std::make_shared<Events>();
  auto b = std::make_shared<Reply>(), c = std::make_shared<Reply>();
  RunClient([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    // A holds the only seat (streaming 50 tokens of 20 ms); B and C arrive while it runs:
    // one of them waits, the other finds the queue full.
    auto done = std::make_shared<int>(0);
    SendInBackground(ex, port,
                     Post("/v1/completions", R"({"prompt":"a","max_tokens":50,"stream":true})"), a,
                     done);
    for (int i = 0; i < 2000 && a->data.empty(); ++i) co_await Sleep(ex, 5);
    EXPECT_FALSE(a->data.empty());
    SendInBackground(ex, port, Post("/v1/completions", R"({"prompt":"b","max_tokens":1})"), b,
                     done);
    SendInBackground(ex, port, Post("/v1/completions", R"({"prompt":"c","max_tokens":1})"), c,
                     done);
    for (int i = 0; i < 6000 && *done < 3; ++i) co_await Sleep(ex, 5);
    EXPECT_EQ(*done, 3);
  });
  std::vector<int> codes = {b->status, c->status};
  std::sort(codes.begin(), codes.end());
  EXPECT_EQ(codes, (std::vector<int>{200, 429}));
  const Reply& refused = b->status == 429 ? *b : *c;
  EXPECT_EQ(http::FindHeader(refused.headers, "Retry-After"), "1");
  json error = json::parse(refused.body);
  EXPECT_EQ(error["error"]["code"], 429);
  EXPECT_FALSE(error["error"]["message"].get<std::string>().empty());
  EXPECT_GE(server->engine_stats().refused, 1u);
  EXPECT_EQ(a->data.size(), 51u);
}

TEST(ServeSimTest, HealthIs503DuringTheStartupDelay) {
  ServeSimOptions options = Fast();
  options.startup_delay_ns = 400 * kNsPerMs;
  const int64_t started = MonoNowNs();
  auto server = Start(options);
  Reply early = Call(server->port(), Get("/health"));
  if (MonoNowNs() - started < 400 * kNsPerMs) {  // only meaningful if we were quick enough
    EXPECT_EQ(early.status, 503);
    EXPECT_EQ(http::FindHeader(early.headers, "Retry-After"), "1");
  }
  Reply api = Call(server->port(), Post("/v1/completions", R"({"prompt":"x"})"));
  if (MonoNowNs() - started < 400 * kNsPerMs) {
    EXPECT_EQ(api.status, 503);
  }
  int status = 0;
  for (int i = 0; i < 200 && status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    status = Call(server->port(), Get("/health")).status;
  }
  EXPECT_EQ(status, 200);
  EXPECT_GE(MonoNowNs() - started, 400 * kNsPerMs);
}

TEST(ServeSimTest, AdminStallDelaysTheNextTokenByAtLeastTheStall) {
  ServeSimOptions options = Fast();
  options.engine.itl_base_ns = 10 * kNsPerMs;
  auto server = Start(options);
  const int port = server->port();
  auto events = std::make_shared<Events>();
  size_t seen_before_stall = 0;
  RunClient([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto done = std::make_shared<int>(0);
    SendInBackground(ex, port,
                     Post("/v1/completions", R"({"prompt":"a b","max_tokens":12,"stream":true})"),
                     events, done);
    for (int i = 0; i < 2000 && events->data.size() < 3; ++i) co_await Sleep(ex, 1);
    // Every event counted here arrived before the stall was asked for.
    seen_before_stall = events->data.size();
    Reply reply;
    http::OutgoingRequest stall = Post("/admin/fault", R"({"stall":"300ms"})");
    co_await Send(ex, port, std::move(stall), reply);
    EXPECT_EQ(reply.status, 200) << reply.body;
    for (int i = 0; i < 6000 && *done < 1; ++i) co_await Sleep(ex, 5);
  });
  ASSERT_EQ(events->data.size(), 13u);  // 12 tokens + [DONE]
  ASSERT_GE(seen_before_stall, 3u);
  ASSERT_LT(seen_before_stall, events->times.size());
  // The first token after the stall request comes at least 300 ms after the last one before.
  EXPECT_GE(events->times[seen_before_stall] - events->times[seen_before_stall - 1],
            300 * kNsPerMs);
}

TEST(ServeSimTest, BadRequestsGet400NamingTheField) {
  auto server = Start(Fast());
  struct Case {
    const char* target;
    const char* body;
    int status;
    const char* param;  // nullptr: null
  };
  const Case cases[] = {
      {"/v1/completions", "{not json", 400, nullptr},
      {"/v1/completions", R"({"prompt":"x","max_tokens":"ten"})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt":"x","max_tokens":5000000})", 400, "max_tokens"},
      {"/v1/completions", R"({"prompt":"x","n":3})", 400, "n"},
      {"/v1/chat/completions", R"({"messages":"hi"})", 400, "messages"},
      {"/v1/embeddings", R"({"input":5})", 400, "input"},
      {"/admin/fault", R"({"stall":"soon"})", 400, "stall"},
      {"/v1/nothing", "{}", 404, nullptr},
  };
  for (const Case& c : cases) {
    Reply reply = Call(server->port(), Post(c.target, c.body));
    EXPECT_EQ(reply.status, c.status) << c.body;
    json error = json::parse(reply.body, nullptr, false);
    ASSERT_FALSE(error.is_discarded()) << reply.body;
    EXPECT_EQ(error["error"]["code"], c.status);
    if (c.param) {
      EXPECT_EQ(error["error"]["param"], c.param) << reply.body;
    } else {
      EXPECT_TRUE(error["error"]["param"].is_null()) << reply.body;
    }
  }
  EXPECT_EQ(Call(server->port(), Get("/v1/completions")).status, 405);
  // Still serving.
  EXPECT_EQ(Call(server->port(), Get("/health")).status, 200);
  std::string prompt = json{{"prompt", Words(9000)}}.dump();
  Reply too_long = Call(server->port(), Post("/v1/completions", prompt));
  EXPECT_EQ(too_long.status, 400);
  EXPECT_EQ(json::parse(too_long.body)["error"]["param"], "prompt");
}

TEST(ServeSimTest, AClientThatDisconnectsFreesItsSeat) {
  ServeSimOptions options = Fast();
  options.engine.itl_base_ns = 5 * kNsPerMs;
  auto server = Start(options);
  const int port = server->port();
  http::ClientResult result =
      RunClient([&](asio::any_io_executor ex) -> asio::awaitable<http::ClientResult> {
        Events events;
        events.stop_after = 3;  // then the client aborts and closes the connection
        http::OutgoingRequest request =
            Post("/v1/completions", R"({"prompt":"a","max_tokens":5000,"stream":true})");
        http::ClientResult result = co_await Send(ex, port, std::move(request), events);
        co_return result;
      });
  EXPECT_EQ(result.error, http::ClientError::kAborted);
  int64_t running = -1;
  for (int i = 0; i < 500; ++i) {
    running = server->engine_stats().running;
    if (running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(running, 0);
  EXPECT_EQ(server->engine_stats().kv_used_blocks, 0);
  EXPECT_EQ(server->engine_stats().aborted, 1u);
  Reply metrics = Call(port, Get("/metrics"));
  EXPECT_NE(metrics.body.find("vllm:num_requests_running{model_name=\"titan-sim\"} 0"),
            std::string::npos);
  EXPECT_NE(metrics.body.find("titan_serve_sim_requests_aborted_total{model_name=\"titan-sim\"} 1"),
            std::string::npos);
}

TEST(ServeSimTest, ANonStreamedClientThatDisconnectsFreesItsSeat) {
  // vLLM and llama-server cancel a non-streamed request whose client left; serve-sim kept
  // generating all its tokens (a probe's fire-and-forget clients filled every seat).
  ServeSimOptions options = Fast();
  options.engine.itl_base_ns = 5 * kNsPerMs;  // 5000 tokens: 25 s
  auto server = Start(options);
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    const std::string body =
        std::string(path).ends_with("chat/completions")
            ? R"({"messages":[{"role":"user","content":"a"}],"max_tokens":5000})"
            : R"({"prompt":"a","max_tokens":5000})";
    asio::io_context io;
    tcp::socket socket(io);
    socket.connect({asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(server->port())});
    const std::string request = fmt::format(
        "POST {} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: {}\r\n\r\n{}",
        path, body.size(), body);
    asio::write(socket, asio::buffer(request));
    for (int i = 0; i < 500 && server->engine_stats().running == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(server->engine_stats().running, 1) << path;
    socket.close();
    for (int i = 0; i < 500 && server->engine_stats().running != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(server->engine_stats().running, 0) << path;
  }
  EXPECT_EQ(server->engine_stats().aborted, 2u);
  EXPECT_EQ(server->engine_stats().kv_used_blocks, 0);
}

TEST(ServeSimTest, ErrorRateOneFailsEveryRequestWith500) {
  ServeSimOptions options = Fast();
  options.error_rate = 1;
  auto server = Start(options);
  Reply reply = Call(server->port(), Post("/v1/completions", R"({"prompt":"x"})"));
  EXPECT_EQ(reply.status, 500);
  EXPECT_EQ(json::parse(reply.body)["error"]["type"], "server_error");
  Reply off = Call(server->port(), Post("/admin/fault", R"({"error_rate":0})"));
  EXPECT_EQ(off.status, 200);
  EXPECT_EQ(Call(server->port(), Post("/v1/completions", R"({"prompt":"x"})")).status, 200);
}

class ConcurrentStreamsTest : public ::testing::TestWithParam<int> {};

TEST_P(ConcurrentStreamsTest, AllFinish) {
  ServeSimOptions options = Fast();
  options.engine.max_num_seqs = 16;   // 64 streams: most wait their turn
  options.http.threads = GetParam();  // > 1: the driver wakes writers on other loops
  auto server = Start(options);
  const int port = server->port();
  std::vector<std::shared_ptr<Events>> all;
  RunClient([&](asio::any_io_executor ex) -> asio::awaitable<void> {
    auto done = std::make_shared<int>(0);
    for (int i = 0; i < 64; ++i) {
      all.push_back(std::make_shared<Events>());
      SendInBackground(
          ex, port,
          Post("/v1/completions", R"({"prompt":"a b c d","max_tokens":20,"stream":true})"),
          all.back(), done);
    }
    for (int i = 0; i < 6000 && *done < 64; ++i) co_await Sleep(ex, 5);
  });
  int complete = 0;
  for (const auto& events : all) {
    complete += events->data.size() == 21 && events->data.back() == "[DONE]";
  }
  EXPECT_EQ(complete, 64);
  EXPECT_EQ(server->engine_stats().finished_length, 64u);
}

// One loop, and three (connections handed to loops other than the acceptor's).
INSTANTIATE_TEST_SUITE_P(Loops, ConcurrentStreamsTest, ::testing::Values(1, 3));

}  // namespace
}  // namespace titan::serve_sim
