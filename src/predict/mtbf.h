// Mean time between failures of a whole fleet per calendar period: the period's observed hours
// divided by the failures in it (every fail record of a selected class, in service or not: a
// fleet-wide rate, as the Titan paper's "system MTBF" counts GPU failures). With a grouping key,
// failures are also split by the failing component's attribute at that time (e.g. batch), each
// group's MTBF being the period's hours over its own failures.
//
// Thread safety: pure function.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "src/fleet/history.h"

namespace titan::predict {

enum class Period { kMonth, kQuarter, kYear };

struct MtbfRow {
  std::string period;                         // "2016-Q4", "2016-10", "2016"
  double begin_seconds = 0, end_seconds = 0;  // clipped to the observation
  double hours = 0;
  int64_t failures = 0;
  double mtbf_hours = 0;  // hours / failures; infinity when none
  double in_service = 0;  // components in service, averaged over the period
  std::map<std::string, int64_t> failures_by_group;
};

// `classes`: the failure classes counted (empty: all). `group_key`: "" for none.
std::vector<MtbfRow> MtbfPerPeriod(const fleet::FleetHistory& history, Period period,
                                   const std::vector<std::string>& classes,
                                   const std::string& group_key);

}  // namespace titan::predict
