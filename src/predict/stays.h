// Stays: a fleet history as counting-process records (start, stop] on each component's age,
// the form R's survival package takes as Surv(start, stop, event).
//
// A component's age is the time since it first entered service. Each record is a stretch of a
// stay in service: it starts at an enter (or at a failure the component stayed in service
// after) and stops at a failure (event: its class), a leave, a move (the next enter) or the
// end of observation (censored). A component that moves between locations therefore enters
// each new record late (delayed entry), with the attributes of that location. Records of zero
// length are dropped (Titan's GPUs leave at the second they fail).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/fleet/history.h"

namespace titan::predict {

struct Stay {
  uint32_t component = 0;
  double start_age_seconds = 0, stop_age_seconds = 0;
  double start_seconds = 0, stop_seconds = 0;     // calendar (epoch) times of the same
  int32_t event_class = -1;                       // index into failure_classes(); -1: censored
  int32_t prior_failures = 0;                     // the component's failures before this record
  const fleet::Attributes* attributes = nullptr;  // the stay's (standing merged with enter's)
};

struct StayTable {
  std::vector<Stay> stays;
  // Owns what Stay::attributes points to (one per enter).
  std::vector<fleet::Attributes> attribute_sets;
  int64_t failures_out_of_service = 0;  // fail records of a component not in service
};

// All records of the history, recurrent failures included.
StayTable BuildStays(const fleet::FleetHistory& history);

// Keeps only what a time-to-first-failure analysis uses: records before each component's first
// failure (prior_failures == 0).
std::vector<Stay> FirstFailureStays(const std::vector<Stay>& stays);

}  // namespace titan::predict
