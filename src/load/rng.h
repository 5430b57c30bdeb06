// Rng: the one pseudo-random generator of titan load's workloads (arrival gaps, prompt lengths,
// synthetic words), so that a run is reproducible from its seed.
//
// The engine is xoshiro256** (Blackman and Vigna), seeded by splitmix64: a fully specified
// sequence, 32 bytes of state, and cheap to seed, which matters because a stream is seeded per
// request (std::mt19937_64 took 15% of the client's CPU at 35,000 requests/s just seeding).
// The distributions are titan's own code below, not <random>'s (whose algorithms differ between
// standard libraries): uniform doubles from the top 53 bits, exponential by inversion, normal by
// Marsaglia's polar method, gamma by Marsaglia-Tsang. So a seed gives the same sequence on every
// platform whose libm rounds log/exp/pow/sqrt the same way (glibc does on all x86-64 and arm64).
//
// Thread safety: not thread-safe; one Rng per thread or per stream (see MixSeed).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace titan::load {

// Derives an independent seed for sub-stream `stream` of `seed` (splitmix64 finaliser of both),
// e.g. one stream for arrivals and one per request for its prompt. Pure.
inline uint64_t MixSeed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& word : state_) {  // splitmix64, as xoshiro's authors recommend
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      word = z ^ (z >> 31);
    }
  }

  uint64_t NextU64() { return engine_(); }

  // Uniform in [0, 1), 53 random bits.
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1]: safe to take the log of.
  double UniformPositive() { return static_cast<double>((engine_() >> 11) + 1) * 0x1.0p-53; }

  // Uniform integer in [lo, hi], unbiased (rejection sampling). Precondition: lo <= hi.
  int64_t UniformInt(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
    if (span == std::numeric_limits<uint64_t>::max()) return static_cast<int64_t>(engine_());
    const uint64_t n = span + 1;
    const uint64_t limit =
        std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
    uint64_t x = engine_();
    while (x >= limit) x = engine_();
    return static_cast<int64_t>(static_cast<uint64_t>(lo) + x % n);
  }

  // Exponential with mean 1.
  double Exponential() { return -std::log(UniformPositive()); }

  // Standard normal N(0, 1). Marsaglia's polar method; the second value of each pair is kept
  // for the next call.
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u = 0, v = 0, s = 0;
    do {
      u = 2 * Uniform() - 1;
      v = 2 * Uniform() - 1;
      s = u * u + v * v;
    } while (s >= 1 || s == 0);
    const double m = std::sqrt(-2 * std::log(s) / s);
    spare_ = v * m;
    has_spare_ = true;
    return u * m;
  }

  // Gamma with shape `shape` > 0 and scale 1 (mean shape, variance shape). Marsaglia-Tsang
  // (2000); shape < 1 by the boost Gamma(shape + 1) * U^(1/shape).
  double Gamma(double shape) {
    if (shape < 1) return Gamma(shape + 1) * std::pow(UniformPositive(), 1 / shape);
    const double d = shape - 1.0 / 3.0;
    const double c = 1 / std::sqrt(9 * d);
    while (true) {
      double x = 0, v = 0;
      do {
        x = Normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const double u = UniformPositive();
      if (u < 1 - 0.0331 * (x * x) * (x * x)) return d * v;
      if (std::log(u) < 0.5 * x * x + d * (1 - v + std::log(v))) return d * v;
    }
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  // xoshiro256**: the next 64 bits.
  uint64_t engine_() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }
  uint64_t state_[4];
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace titan::load
