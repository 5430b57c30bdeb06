// Router: picks the replica for one request among the candidates the gateway offers (ready,
// in the request's pool, with a free seat and room in its token budget). Free of I/O.
//
// Load of a candidate = (requests the gateway has in flight there + the replica's own queue,
// as last scraped from its /metrics) / its slow-start weight (0 < weight <= 1, 1 once warm).
// Policies:
//   round_robin        the next candidate in turn;
//   least_outstanding  the least loaded (ties: the lower index);
//   p2c                the less loaded of two drawn at random (power of two choices);
//   prefix             the replica that owns the key (a hash of the prompt's first
//                      routing.prefix_chars bytes): a new key is given to the candidate within
//                      the load bound that owns the fewest keys (ties: the less loaded, then
//                      rendezvous order), so N prefixes split N/replicas each, where a hash
//                      alone splits 4 prefixes 3:1 over 2 replicas half the time. Owners are
//                      kept for the kMaxPrefixOwners most recently used keys (LRU); a key whose
//                      owner is over the bound or not a candidate (ejected, excluded for a
//                      retry) goes by rendezvous order for that request and keeps its owner.
//   session            rendezvous hashing of the session id over the candidates, taking the
//                      first in the key's order within the bound (no per-session state).
// The load bound is load_factor * (mean load + 1): a hot prefix or session spills instead of
// overloading one replica. Without a key (no prompt, no session), both fall back to p2c.
// The owner table is per gateway process: gateways side by side may place a prefix apart.
//
// Thread safety: none; owned by the gateway's event loop.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <string_view>
#include <unordered_map>
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
  // Prefix keys whose owner is remembered (about 100 bytes each).
  static constexpr size_t kMaxPrefixOwners = 1 << 16;

  explicit Router(const RoutingConfig& config, uint64_t seed = 1) : config_(config), rng_(seed) {}
  void Reconfigure(const RoutingConfig& config) { config_ = config; }
  const RoutingConfig& config() const { return config_; }

  // The chosen candidate's position in `candidates`, or -1 when there is none.
  int Pick(const std::vector<Candidate>& candidates, std::optional<uint64_t> key);

  // Prefix keys with a remembered owner (<= kMaxPrefixOwners).
  size_t prefix_owners() const { return owners_.size(); }

 private:
  struct Owner {
    int replica = 0;
    std::list<uint64_t>::iterator recency;
  };

  int PickP2c(const std::vector<Candidate>& candidates);
  double LoadBound(const std::vector<Candidate>& candidates) const;
  // The first candidate in the key's rendezvous order within the load bound, skipping `skip`.
  int PickBounded(const std::vector<Candidate>& candidates, uint64_t key, int skip = -1) const;
  int PickPrefix(const std::vector<Candidate>& candidates, uint64_t key);
  void Own(uint64_t key, int replica);

  RoutingConfig config_;
  load::Rng rng_;
  uint64_t next_ = 0;
  std::unordered_map<uint64_t, Owner> owners_;
  std::list<uint64_t> recency_;                  // prefix keys, most recently used first
  std::unordered_map<int, int64_t> keys_owned_;  // replica -> keys in owners_
};

}  // namespace titan::gateway
