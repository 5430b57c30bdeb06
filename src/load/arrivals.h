// Arrival processes: when an open-loop load test plans to send each request.
//
// An ArrivalSpec is parsed from one flag value (rates in requests per second, durations in
// titan's duration syntax, src/base/duration.h):
//
//   R                                      same as poisson:rate=R
//   constant:rate=R                        evenly spaced, the first at offset 0
//   poisson:rate=R                         exponential gaps of mean 1/R
//   gamma:rate=R,burstiness=B              gamma gaps, shape B, scale 1/(R*B): mean rate R,
//                                          coefficient of variation 1/sqrt(B) (vLLM's
//                                          --burstiness: 1 is Poisson, < 1 burstier)
//   burst:quiet=D,size=N[,repeat=K][,rate=R]
//                                          quiet for D, then N requests at the same instant,
//                                          K times (default 1; 0 = until the run ends): bursts at
//                                          D, 2D, .., K*D; plus optional background Poisson R
//   stages:R1xD1,R2xD2,..[,shape=constant] rate R1 for D1, then R2 for D2, ..; Poisson within
//                                          each stage (or evenly spaced); ends after the last
//   ramp:from=R0,to=R1,over=D[,shape=constant]
//                                          rate rising (or falling) linearly from R0 to R1 over
//                                          D, then holding R1; non-homogeneous Poisson
//
// Poisson, stages and ramp are one non-homogeneous Poisson process, generated exactly by
// inverting its cumulative rate Lambda(t): the k-th arrival is where Lambda reaches E1+..+Ek
// (Ek exponential with mean 1), or k-1 for shape=constant (so constant:rate=R sends at 0, 1/R,
// 2/R, .. without drift).
//
// Thread safety: specs are plain values; an ArrivalProcess is not thread-safe (one per runner).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan::load {

enum class ArrivalKind { kConstant, kPoisson, kGamma, kBurst, kStages, kRamp };

struct ArrivalStage {
  double rate = 0;  // requests/s, >= 0
  int64_t duration_ns = 0;

  friend bool operator==(const ArrivalStage&, const ArrivalStage&) = default;
};

// Which fields a kind uses is listed at each; the others keep their defaults.
struct ArrivalSpec {
  ArrivalKind kind = ArrivalKind::kPoisson;
  // constant, poisson, gamma: the rate; burst: the background Poisson rate (0 = none;
  // ParseArrivalSpec sets 0 unless rate= is given, so set it when building a burst by hand).
  double rate = 1;
  double burstiness = 1;             // gamma: the shape B
  int64_t quiet_ns = 0;              // burst: the gap before each burst
  uint64_t burst_size = 0;           // burst: requests per burst
  uint64_t repeat = 1;               // burst: bursts, 0 = until the run ends
  std::vector<ArrivalStage> stages;  // stages
  double from_rate = 0;              // ramp
  double to_rate = 0;                // ramp
  int64_t over_ns = 0;               // ramp
  bool evenly_spaced = false;        // stages, ramp: shape=constant

  friend bool operator==(const ArrivalSpec&, const ArrivalSpec&) = default;
};

// Bounds enforced by ParseArrivalSpec and WithRate.
inline constexpr double kMaxArrivalRate = 1e7;   // requests/s
inline constexpr double kMinArrivalRate = 1e-6;  // for a rate that must be positive
inline constexpr uint64_t kMaxBurstSize = 10'000'000;
inline constexpr size_t kMaxStages = 10'000;

// Parses the forms above. Errors (INVALID_ARGUMENT) name the offending part and list the
// accepted forms.
Result<ArrivalSpec> ParseArrivalSpec(std::string_view text);

// The canonical form, which ParseArrivalSpec reads back to an equal spec.
std::string ToString(const ArrivalSpec& spec);

// The long-run mean rate in requests/s: the rate; for burst size/quiet + rate; for stages the
// duration-weighted mean; for ramp the mean over the ramp, (from + to) / 2.
double MeanRate(const ArrivalSpec& spec);

// The same shape at mean rate `rate` (> 0), for sweeps: every rate is scaled by
// rate / MeanRate(spec); a burst keeps its timing and scales `size` (rounded, at least 1) and its
// background rate, so its mean rate is `rate` up to that rounding. Scaled values are clamped to
// the bounds above.
ArrivalSpec WithRate(const ArrivalSpec& spec, double rate);

// Planned send times of one run.
class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  // The next planned send offset in ns from the run start: non-decreasing (equal within a
  // burst), below the run's duration; nullopt once the run's duration, its request limit or the
  // process itself (the last stage, the last burst) has ended, and on every call after.
  virtual std::optional<int64_t> Next() = 0;
};

// A process for `spec`, deterministic for `seed` (see rng.h). duration_ns bounds the offsets
// (exclusive) and max_requests the number of arrivals; 0 leaves that limit off (both 0 with an
// endless spec: an endless process). INVALID_ARGUMENT for a spec outside the bounds above or a
// negative duration.
Result<std::unique_ptr<ArrivalProcess>> MakeArrivals(const ArrivalSpec& spec, uint64_t seed,
                                                     int64_t duration_ns, uint64_t max_requests);

}  // namespace titan::load
