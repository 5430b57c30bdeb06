// The sweep: finds the largest request rate that meets an SLO (the knee of the
// throughput-latency curve, set by queueing and scheduling transients).
//
// Probe up from `start_rate`, doubling, until a rate misses the SLO (or `max_rate` passes);
// then bisect geometrically between the last pass and the first miss until they are within
// `precision` of each other; then repeat the runs next to the boundary `repeats` times (a rate
// passes only if every repeat passes). A probe whose outcome is decided early (more SLO misses
// than the gate's quantile allows, or a queue growing without bound) stops early and fails.
//
// Thread safety: runs probes one after another on the calling thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/load/stats.h"

namespace titan::load {

struct SweepOptions {
  double start_rate = 1;
  double max_rate = 100'000;
  double precision = 0.1;  // stop bisecting when first_miss / last_pass <= 1 + precision
  int max_probes = 20;
  int repeats = 1;  // extra runs at the two rates next to the boundary
};

struct Probe {
  double rate = 0;  // offered (planned) mean rate
  Summary summary;
  bool passed = false;
  bool stopped_early = false;
  std::string why;  // what failed ("p99_ttft 812ms > 500ms", "invalid run: ...")
};

struct SweepResult {
  std::vector<Probe> probes;  // in the order run
  bool knee_found = false;    // a passing rate below a failing one
  double knee_rate = 0;       // the largest rate that passed (all its repeats)
  std::string verdict;        // one sentence for the user
};

// `run_probe(rate)` runs one probe at mean rate `rate` and returns its result.
Result<SweepResult> Sweep(const SweepOptions& options,
                          const std::function<Result<Probe>(double rate)>& run_probe);

// Why a probe's summary fails (empty when it passes): missed gates, invalid run, errors.
std::string ProbeVerdict(const Summary& summary);

}  // namespace titan::load
