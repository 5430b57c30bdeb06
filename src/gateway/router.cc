#include "src/gateway/router.h"

#include <xxhash.h>

#include <algorithm>
#include <tuple>

namespace titan::gateway {

namespace {

double Load(const Candidate& c) {
  return (c.in_flight + std::max(0.0, c.queued)) / std::max(c.weight, 1e-3);
}

// Rendezvous score of (key, replica): a stable random order of replicas per key.
uint64_t Score(uint64_t key, int replica) {
  const uint64_t parts[2] = {key, static_cast<uint64_t>(replica)};
  return XXH3_64bits(parts, sizeof(parts));
}

}  // namespace

std::optional<uint64_t> PrefixKey(std::string_view prompt, size_t prefix_chars) {
  if (prompt.empty()) return std::nullopt;
  prompt = prompt.substr(0, prefix_chars);
  return XXH3_64bits(prompt.data(), prompt.size());
}

std::optional<uint64_t> SessionKey(std::string_view session) {
  if (session.empty()) return std::nullopt;
  return XXH3_64bits_withSeed(session.data(), session.size(), 0x5e55);
}

int Router::PickP2c(const std::vector<Candidate>& candidates) {
  const int n = static_cast<int>(candidates.size());
  if (n == 1) return 0;
  const int a = static_cast<int>(rng_.UniformInt(0, n - 1));
  int b = static_cast<int>(rng_.UniformInt(0, n - 2));
  if (b >= a) ++b;
  return Load(candidates[b]) < Load(candidates[a]) ? b : a;
}

double Router::LoadBound(const std::vector<Candidate>& candidates) const {
  double total = 0;
  for (const Candidate& c : candidates) total += Load(c);
  return config_.load_factor * (total / candidates.size() + 1);
}

int Router::PickBounded(const std::vector<Candidate>& candidates, uint64_t key, int skip) const {
  const double bound = LoadBound(candidates);
  std::vector<std::pair<uint64_t, int>> order;
  order.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (static_cast<int>(i) == skip) continue;
    order.push_back({Score(key, candidates[i].replica), static_cast<int>(i)});
  }
  if (order.empty()) return skip;
  std::sort(order.begin(), order.end(), std::greater<>());
  for (const auto& [score, i] : order) {
    if (Load(candidates[i]) <= bound) return i;
  }
  return order.front().second;  // only when `skip` was the least loaded
}

int Router::PickPrefix(const std::vector<Candidate>& candidates, uint64_t key) {
  const double bound = LoadBound(candidates);
  if (auto it = owners_.find(key); it != owners_.end()) {
    recency_.splice(recency_.begin(), recency_, it->second.recency);
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].replica != it->second.replica) continue;
      const int owner = static_cast<int>(i);
      return Load(candidates[i]) <= bound ? owner : PickBounded(candidates, key, owner);
    }
    return PickBounded(candidates, key);
  }
  // A new key: the candidate within the bound owning the fewest keys. The least loaded
  // candidate is always within the bound, so there is one.
  int best = -1;
  auto rank = [&](int i) {
    const auto owned = keys_owned_.find(candidates[i].replica);
    return std::tuple(owned == keys_owned_.end() ? 0 : owned->second, Load(candidates[i]),
                      ~Score(key, candidates[i].replica));
  };
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (Load(candidates[i]) > bound) continue;
    if (best < 0 || rank(static_cast<int>(i)) < rank(best)) best = static_cast<int>(i);
  }
  Own(key, candidates[best].replica);
  return best;
}

void Router::Own(uint64_t key, int replica) {
  recency_.push_front(key);
  owners_[key] = {replica, recency_.begin()};
  ++keys_owned_[replica];
  if (owners_.size() <= kMaxPrefixOwners) return;
  const auto oldest = owners_.find(recency_.back());
  if (--keys_owned_[oldest->second.replica] == 0) keys_owned_.erase(oldest->second.replica);
  owners_.erase(oldest);
  recency_.pop_back();
}

int Router::Pick(const std::vector<Candidate>& candidates, std::optional<uint64_t> key) {
  if (candidates.empty()) return -1;
  switch (config_.policy) {
    case RoutingPolicy::kRoundRobin:
      return static_cast<int>(next_++ % candidates.size());
    case RoutingPolicy::kLeastOutstanding: {
      int best = 0;
      for (size_t i = 1; i < candidates.size(); ++i) {
        if (Load(candidates[i]) < Load(candidates[best])) best = static_cast<int>(i);
      }
      return best;
    }
    case RoutingPolicy::kPowerOfTwo:
      return PickP2c(candidates);
    case RoutingPolicy::kPrefix:
      return key ? PickPrefix(candidates, *key) : PickP2c(candidates);
    case RoutingPolicy::kSession:
      return key ? PickBounded(candidates, *key) : PickP2c(candidates);
  }
  return 0;
}

}  // namespace titan::gateway
