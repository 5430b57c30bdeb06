// Times written in log lines, read onto titan diagnose's one clock (types.h LogTime).
//
// Recognised near the start of a line (within its first kTimeSearchBytes):
//   2025-01-21T04:41:44,283302+00:00   ISO 8601 ('T', ' ' or '_' between date and time; '.' or
//   [2025-06-02 20:51:24,182]          ',' before the fraction; Z or an offset, else UTC)
//   08/13/2020 18:56:31                US dates (transformers, many launchers)
//   [Tue Apr  9 01:21:38 2024]         dmesg -T (ctime)
//   Apr  9 01:21:38 host kernel: ...   syslog / journalctl (no year: kWallNoYear)
//   [E321 02:07:08.408271257 ...]      glog / c10 ("E0321" or "E321": no year)
//   [856341.770960]                    dmesg's clock: seconds since boot (kBoot)
// dmesg's relative "[  +0.000005]" deltas are no clock (they need every line before them).
//
// Thread safety: pure functions.
#pragma once

#include <string_view>

#include "src/diagnose/types.h"

namespace titan::diagnose {

inline constexpr size_t kTimeSearchBytes = 160;

// The first time written near the start of `line`; kind kNone if there is none.
LogTime ParseLineTime(std::string_view line);

// A kWallNoYear time placed in `year` (UTC); other kinds are returned as they are.
LogTime PlaceInYear(LogTime t, int year);

// The UTC calendar year of a kWall time.
int YearOf(const LogTime& t);

// Epoch seconds of a UTC civil time (no range checks beyond the arguments' types).
int64_t EpochSecondsUtc(int year, int month, int day, int hour, int minute, int second);

}  // namespace titan::diagnose
