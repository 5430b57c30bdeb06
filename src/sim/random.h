// Random numbers for the simulator: a small, fast generator (xoshiro256++) and the draws the
// failure model needs. Each Monte Carlo replica owns one Rng seeded from (seed, replica index),
// so results do not depend on how replicas are spread over threads.
// Thread safety: an Rng is not shared; use one per replica.
#pragma once

#include <cmath>
#include <cstdint>

namespace titan::sim {

// splitmix64: turns any 64-bit value into a well-mixed one (used for seeding).
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  // The stream of replica `index` of a run seeded with `seed`.
  Rng(uint64_t seed, uint64_t index) {
    uint64_t mix = seed ^ (index * 0xd1b54a32d192ed03ULL + 0x8cb92ba72f3d8dd7ULL);
    for (uint64_t& word : s_) word = SplitMix64(&mix);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[0] + s_[3], 23) + s_[0];
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in (0, 1]: never 0, so -log(u) is finite.
  double UniformOpenZero() { return (static_cast<double>(Next() >> 11) + 1.0) * 0x1.0p-53; }

  // Exponential with the given rate (events per second); rate > 0.
  double Exponential(double rate) { return -std::log(UniformOpenZero()) / rate; }

  // Weibull with shape k and scale lambda (seconds): lambda * (-log u)^(1/k).
  double Weibull(double shape, double scale) {
    return scale * std::pow(-std::log(UniformOpenZero()), 1.0 / shape);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace titan::sim
