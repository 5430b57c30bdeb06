#include "src/gateway/router.h"

#include <xxhash.h>

#include <algorithm>

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

int Router::PickBounded(const std::vector<Candidate>& candidates, uint64_t key) const {
  double total = 0;
  for (const Candidate& c : candidates) total += Load(c);
  const double bound = config_.load_factor * (total / candidates.size() + 1);
  std::vector<std::pair<uint64_t, int>> order;
  order.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    order.push_back({Score(key, candidates[i].replica), static_cast<int>(i)});
  }
  std::sort(order.begin(), order.end(), std::greater<>());
  for (const auto& [score, i] : order) {
    if (Load(candidates[i]) <= bound) return i;
  }
  return order.front().second;  // unreachable: the least loaded is always within the bound
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
    case RoutingPolicy::kSession:
      return key ? PickBounded(candidates, *key) : PickP2c(candidates);
  }
  return 0;
}

}  // namespace titan::gateway
