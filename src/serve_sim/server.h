// serve-sim's HTTP face: an OpenAI-compatible server (titan's http::Server) in front of one
// simulated Engine (engine.h), with vLLM-named metrics (src/metrics) and injectable faults.
//
// Endpoints (docs/serve-sim.md has the bodies):
//   POST /v1/completions, /v1/chat/completions   stream or not; usage; 429 when the queue is full
//   POST /v1/embeddings                           a prefill-only request; unit vectors
//   POST /tokenize                                {"prompt"|"content"|"messages"} -> tokens, count
//   GET  /health /v1/models /version /metrics
//   POST /admin/fault                             {"stall":"2s"} {"slow":5} {"error_rate":0.1}
//                                                 {"crash":true}; a test hook, on by default only
//                                                 when listening on loopback
// Errors are JSON in OpenAI's shape {"error":{"message","type","param","code"}}: 400 for bad
// bodies (naming the field), 404 unknown path, 405 wrong method, 429 queue full (Retry-After: 1),
// 500 injected error, 503 during the startup delay.
//
// Coupling: the engine is driven by one coroutine (the "driver") on an event loop: it runs
// Engine::Step, sleeps on a steady_timer until the step's end, then appends each emitted token
// to its stream's pending bytes and wakes the stream's writer (a cancelled timer) if it is
// idle; a writer that is still sending takes everything pending in its next write, so tokens
// coalesce under load instead of queueing writes. No timer per token. A write that fails (the
// client went away) aborts the sequence and frees its seat and KV blocks.
//
// Time: engine time is monotonic time since Start; scheduled faults count from there. Steps
// chain on an absolute schedule: a wake-up less than 1 ms late starts the next step at the
// planned time, so timer latency does not slow the simulated model down.
//
// Thread safety: Start/Stop/port/engine_stats from any thread; the server's own threads
// (ServeSimOptions::http.threads event loops) share the engine under one mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/http/server.h"
#include "src/serve_sim/engine.h"
#include "src/serve_sim/request.h"

namespace titan::serve_sim {

struct ServeSimOptions {
  http::ServerOptions http;  // address, port (0: ephemeral), threads, limits
  std::string model = "titan-sim";
  EngineConfig engine;
  int64_t default_max_tokens = 16;
  int64_t max_tokens_limit = 1'000'000;
  int64_t embedding_dim = 64;
  int64_t startup_delay_ns = 0;  // /health and the APIs answer 503 until then
  double error_rate = 0;         // fraction of generation/embedding requests answered 500
  // stall and slow go to the engine's schedule; error-rate and crash are applied here.
  std::vector<FaultSpec> faults;
  bool admin = true;  // serve POST /admin/fault
};

class ServeSim {
 public:
  // Validates the options (errors name the flag), binds and starts serving.
  static Result<std::unique_ptr<ServeSim>> Start(ServeSimOptions options);
  ~ServeSim();  // Stop()
  ServeSim(const ServeSim&) = delete;
  ServeSim& operator=(const ServeSim&) = delete;

  int port() const;
  // Closes every connection and joins the threads. Idempotent.
  void Stop();
  // A snapshot of the engine's state and counters.
  EngineStats engine_stats() const;

  struct Impl;

 private:
  explicit ServeSim(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace titan::serve_sim
