// Clocks. All timestamps titan exports are wall-clock (CLOCK_REALTIME) integer nanoseconds
// since the Unix epoch, so that agent telemetry, client events and PyTorch profiler traces share
// one timeline. Durations and scheduling use CLOCK_MONOTONIC, which never jumps.
// Thread safety: all functions are safe from any thread.
#pragma once

#include <cstdint>

namespace titan {

inline constexpr int64_t kNsPerUs = 1'000;
inline constexpr int64_t kNsPerMs = 1'000'000;
inline constexpr int64_t kNsPerSecond = 1'000'000'000;

// Nanoseconds since the Unix epoch (CLOCK_REALTIME).
int64_t WallNowNs();
// Nanoseconds since an arbitrary fixed point (CLOCK_MONOTONIC); for durations only.
int64_t MonoNowNs();
// Sleeps until the monotonic time `deadline_ns` (absolute), resuming after signals (EINTR).
void SleepUntilMonoNs(int64_t deadline_ns);

inline double NsToSeconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace titan
