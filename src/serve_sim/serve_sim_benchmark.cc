// Streamed tokens per second through serve-sim's HTTP coupling: one server event-loop thread,
// N concurrent streaming clients (titan's ClientConnection + SseParser on the benchmark's
// thread), itl_base 1 ms. Each token is one SSE event; the counters say how many arrived per
// second and how much of a core the server used for them.
//
//   build/release/src/serve_sim/serve_sim_benchmark
//
// load_factor 0 keeps every step at 1 ms, so the offered rate is streams x 1000 tokens/s and
// the achieved rate shows where the coupling (not the simulated model) becomes the limit.
#include <time.h>

#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "src/base/clock.h"
#include "src/http/client.h"
#include "src/http/sse.h"
#include "src/serve_sim/server.h"

namespace titan::serve_sim {
namespace {

namespace asio = boost::asio;

int64_t CpuNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return ts.tv_sec * kNsPerSecond + ts.tv_nsec;
}

struct Counter : http::ResponseObserver {
  http::SseParser parser;
  int64_t* events;
  explicit Counter(int64_t* events) : events(events) {}
  bool OnBody(std::string_view bytes, int64_t) override {
    return parser.Feed(bytes, [&](const http::SseEvent&) { ++*events; }).ok();
  }
};

asio::awaitable<void> OneStream(asio::any_io_executor ex, asio::ip::tcp::endpoint endpoint,
                                http::OutgoingRequest request, int64_t* events, int* done) {
  http::ClientConnection connection(ex);
  http::ClientResult r = co_await connection.Connect(endpoint, kNsPerSecond);
  if (r.ok()) {
    Counter counter(events);
    r = co_await connection.Send(request, counter, MonoNowNs() + 120 * kNsPerSecond);
  }
  ++*done;
}

void BM_StreamedTokens(benchmark::State& state) {
  const int streams = static_cast<int>(state.range(0));
  const int64_t max_tokens = 400;
  ServeSimOptions options;
  options.engine.itl_base_ns = kNsPerMs;
  options.engine.load_factor = static_cast<double>(state.range(1)) / 100;
  options.engine.prefill_overhead_ns = 100 * kNsPerUs;
  options.engine.prefill_per_token_ns = 0;
  options.engine.max_num_seqs = streams;
  options.engine.kv_capacity_tokens = 1 << 22;
  auto server = ServeSim::Start(options);
  if (!server.ok()) {
    state.SkipWithError(std::string(server.status().message()).c_str());
    return;
  }
  const asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"),
                                         static_cast<uint16_t>((*server)->port()));
  http::OutgoingRequest request;
  request.target = "/v1/completions";
  request.host = "127.0.0.1";
  request.body = "{\"prompt\":\"a b c d e f g h\",\"stream\":true,\"max_tokens\":" +
                 std::to_string(max_tokens) + "}";
  int64_t events = 0, server_cpu = 0, wall = 0;
  for (auto _ : state) {
    asio::io_context context(1);
    int done = 0;
    const int64_t before_events = events;
    const int64_t t0 = MonoNowNs();
    const int64_t process0 = CpuNs(CLOCK_PROCESS_CPUTIME_ID),
                  thread0 = CpuNs(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < streams; ++i) {
      asio::co_spawn(context, OneStream(context.get_executor(), endpoint, request, &events, &done),
                     asio::detached);
    }
    context.run();
    wall += MonoNowNs() - t0;
    server_cpu +=
        (CpuNs(CLOCK_PROCESS_CPUTIME_ID) - process0) - (CpuNs(CLOCK_THREAD_CPUTIME_ID) - thread0);
    if (events - before_events != static_cast<int64_t>(streams) * (max_tokens + 1)) {
      state.SkipWithError("a stream ended early");
      break;
    }
  }
  const int64_t tokens = events * max_tokens / (max_tokens + 1);  // less the [DONE] events
  state.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["offered_per_s"] = static_cast<double>(streams) * 1e9 /
                                    static_cast<double>(options.engine.itl_base_ns) /
                                    (1 + options.engine.load_factor * (streams - 1) / streams);
  state.counters["server_core"] = static_cast<double>(server_cpu) / static_cast<double>(wall);
  state.counters["server_cpu_us_per_token"] =
      tokens > 0 ? static_cast<double>(server_cpu) / 1e3 / static_cast<double>(tokens) : 0;
}
// {streams, load_factor x 100}
BENCHMARK(BM_StreamedTokens)
    ->Args({64, 0})
    ->Args({128, 0})
    ->Args({256, 0})
    ->Args({256, 100})
    ->Iterations(3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace titan::serve_sim
