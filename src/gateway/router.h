// Router: picks the replica for one request among the candidates the gateway offers (ready,
// in the request's pool, with a free seat and room in its token budget). Free of I/O.
//
// Load of a candidate = (requests the gateway has in flight there + the replica's own queue,
// as last scraped from its /metrics) / its slow-start weight (0 < weight <= 1, 1 once warm).
// Policies:
//   round_robin        the next candidate in turn;
//   least_outstanding  the least loaded (ties: the lower index);
//   p2c                the less loaded of two drawn at random (power of two choices);
//   prefix, session    rendezvous hashing of the key (a hash of the prompt's first
//                      routing.prefix_chars bytes, or of the session id) over the candidates,
//                      taking the first in the key's order whose load <= load_factor * (mean
//                      load + 1): consistent hashing with bounded loads, so a hot prefix
//                      spills to its second choice instead of overloading one replica. It
//                      keeps no per-prefix state: memory does not grow with the prefixes seen.
// Without a key (no prompt, no session), prefix and session fall back to p2c.
//
// Thread safety: none; owned by the gateway's event loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "src/gateway/config.h"
#include "src/load/rng.h"

namespace titan::gateway {

struct Candidate {
  int replica = 0;  // the gateway's replica index (stable across restarts)
  int in_flight = 0;
  double queued = 0;  // the replica's own waiting requests (scraped)
  double weight = 1;  // slow start: (0, 1]
};

// A 64-bit hash of the first `prefix_chars` bytes of `prompt` (nullopt when it is empty).
std::optional<uint64_t> PrefixKey(std::string_view prompt, size_t prefix_chars);
std::optional<uint64_t> SessionKey(std::string_view session);

class Router {
 public:
  explicit Router(const RoutingConfig& config, uint64_t seed = 1) : config_(config), rng_(seed) {}
  void Reconfigure(const RoutingConfig& config) { config_ = config; }
  const RoutingConfig& config() const { return config_; }

  // The chosen candidate's position in `candidates`, or -1 when there is none.
  int Pick(const std::vector<Candidate>& candidates, std::optional<uint64_t> key);

 private:
  int PickP2c(const std::vector<Candidate>& candidates);
  int PickBounded(const std::vector<Candidate>& candidates, uint64_t key) const;

  RoutingConfig config_;
  load::Rng rng_;
  uint64_t next_ = 0;
};

}  // namespace titan::gateway
