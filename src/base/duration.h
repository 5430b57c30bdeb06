// The one duration syntax of titan's flags and config files: a number followed by a unit
// (ns, us, ms, s, m, h, d), or a bare number of seconds: "100ms", "2.5s", "2m", "30d", "15".
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace titan {

// Parses `text` into nanoseconds. False if malformed, not positive, or over ~292 years.
bool ParseDurationNs(std::string_view text, int64_t* out_ns);

// Like ParseDurationNs but also accepts 0 ("0", "0s", "0ms"): for delays that may be off.
bool ParseDurationOrZeroNs(std::string_view text, int64_t* out_ns);

// The shortest readable form that ParseDurationNs reads back exactly when whole: "250ms",
// "1.5s", "2m", "800us", "17ns".
std::string FormatDuration(int64_t ns);

// Rounded for people, not parseable back exactly: "850us", "12.3ms", "14.2s", "1.5h", "30.0d",
// "0".
std::string FormatDurationShort(int64_t ns);

}  // namespace titan
