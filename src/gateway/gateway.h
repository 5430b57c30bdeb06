// Gateway: titan gateway's proxy, an OpenAI-compatible HTTP/1.1 reverse proxy in front of LLM
// replicas (llama.cpp's llama-server, vLLM, serve-sim) that keeps admitted requests within
// their latency targets under bursts. docs/gateway.md shows it at work.
//
// A client request goes through, in order:
//   1. inspection: the body is parsed (openai_request.h); a malformed one gets 400 naming the
//      field. Limits (config.h LimitsConfig): n, max_tokens, prompt tokens (estimated from
//      bytes, the replica's /tokenize near the limit); over one: 400 naming the limit, or the
//      "long" pool for long prompts.
//   2. batching (embeddings, non-streamed completions, when enabled): compatible requests
//      queued within batching.max_queue_delay go upstream as one request and are split back.
//   3. admission (admission.h): a seat on a ready replica of its pool (in-flight below the
//      replica's limit, prompt + max_tokens within its token budget) now, or a place in its
//      class's bounded queue; 429 + Retry-After when the queue is full or the expected wait is
//      past the request's deadline, 429 after queue_timeout, 503 when no replica is ready.
//   4. routing (router.h) among the replicas with a free seat.
//   5. relay: the upstream answer goes to the client as it arrives (streams unbuffered; whole
//      answers when the client did not stream). A request that failed before the replica's
//      first byte (connect error, reset, 5xx, 429) is retried on another replica (`retries`).
//      A client that goes away closes the upstream connection, which cancels the request in
//      the replica. A replica failing mid-stream: the client gets an SSE error event and a
//      cleanly ended stream.
// Beside the requests: health checks, /metrics scrapes of the replicas (their own queues feed
// routing), outlier ejection with back-off and slow start (replica_health.h), supervised
// replica processes (replica_launcher.h), telemetry (telemetry.h), a JSON access log.
//
// Own endpoints: GET /healthz (200 while a replica is ready, else 503), GET /metrics,
// GET /admin/replicas (JSON). Other paths under /v1/ and /tokenize go to a ready replica as
// they are.
//
// Threading: one event loop (the http::Server's single thread) runs every request, timer and
// upstream connection, so the gateway's state needs no lock; the public methods below may be
// called from any thread and post to that loop. One loop proxies tens of thousands of
// requests per second, more than any set of LLM replicas serves (bench/RESULTS.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/gateway/config.h"

namespace titan::gateway {

struct ReplicaSnapshot {
  std::string url;
  std::string pool;
  std::string state;  // ReplicaStateName
  int in_flight = 0;
  int limit = 0;
  int ejections = 0;
  double queued = 0;  // scraped from the replica
  int restarts = 0;   // supervised replicas: respawns
  // The stall watch: time since its last progress while busy, the silence that would make it
  // stalled now, and the longest its requests in flight have waited for a first byte.
  double silence_ms = 0, stall_threshold_ms = 0, oldest_without_first_byte_ms = 0;
  double weight = 1;  // routing weight: slow start x slowness (capacity.h)
};

struct GatewayCounters {
  uint64_t requests = 0;  // API requests received
  uint64_t admitted = 0;  // given a seat
  uint64_t shed = 0;      // refused by admission (429/503)
  uint64_t invalid = 0;   // 400/413 before admission
  uint64_t retries = 0;
  uint64_t ejections = 0;
  uint64_t client_gone = 0;  // clients that left before their answer ended
  // Streams cut off because their client fell too far behind (not the replica's failure).
  uint64_t client_behind = 0;
  uint64_t batches = 0;    // upstream batches sent
  uint64_t batched = 0;    // client requests that went in them
  uint64_t in_flight = 0;  // now
  uint64_t hedges = 0;     // hedges and rescues sent
};

class Gateway {
 public:
  // Validates `config`, starts supervised replicas (config.launch), listens and starts the
  // background loops. Errors name the flag or key.
  static Result<std::unique_ptr<Gateway>> Start(GatewayConfig config);
  ~Gateway();  // Stop()
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  int port() const;
  // Applies a new configuration (a SIGHUP reload) without dropping connections: limits,
  // admission, routing, batching, health and outlier settings, and the static replica list
  // (replicas gone from it stop getting new requests). listen and launch need a restart
  // (an error says so). Invalid configurations are refused and the running one is kept.
  Status Reload(GatewayConfig config);
  // Stops admitting (new requests get 503), waits up to drain_timeout for in-flight requests,
  // and returns how many were still running then. Those are cut: each gets a 503 (a stream: a
  // final error event), and Drain returns once their answers are written (at most 2 s more).
  int Drain();
  // Stops everything: connections, background loops, supervised replicas. Idempotent.
  void Stop();

  std::vector<ReplicaSnapshot> Replicas() const;
  GatewayCounters Counters() const;
  std::string Metrics() const;

  struct Impl;

 private:
  explicit Gateway(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace titan::gateway
