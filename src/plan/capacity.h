// A replica's capacity at an SLO, from `titan load sweep --json` ("kind": "titan.load.sweep").
//
// Each probe's run carries its latency distributions (p50 ... p99.9, max, mean of ttft, itl,
// tpot, e2e) and its errors. Against an SLO (titan load's syntax, src/load/stats.h; by default
// the one the sweep ran with), an offered rate passes when every probe at it meets every gate;
// the capacity is the largest passing rate below the smallest failing one (the knee, as the
// sweep finds it), and the replica's goodput at the SLO is what that probe completed per second
// (the mean over its repeats). Tokens per request come from the same probes.
//
// Errors: not JSON, not a sweep (naming the keys found), an SLO that does not parse, or no rate
// that meets the SLO (naming the lowest rate tried and why it failed).
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan::plan {

struct Capacity {
  std::string slo;                // the gates applied
  double knee_rate = 0;           // offered requests/s
  double goodput_rps = 0;         // completed requests/s at the knee
  double tokens_per_request = 0;  // prompt + output, at the knee
  double output_tokens_per_request = 0;
  double first_failing_rate = 0;  // 0 when every rate passed
  int probes = 0;
  std::string why_next_fails;  // the gates the next rate missed
};

// `slo`: "" for the sweep's own.
Result<Capacity> ReadCapacity(std::string_view sweep_json, const std::string& source,
                              const std::string& slo);

}  // namespace titan::plan
