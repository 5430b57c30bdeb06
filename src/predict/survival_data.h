// The input of the survival estimators: counting-process intervals (start, stop] with an event
// (-1: censored; else a cause index) and a cluster (the component, for robust variances), as
// R's Surv(start, stop, event) + cluster(id). Times in any unit; the estimators report times in
// the same unit.
#pragma once

#include <cstdint>
#include <vector>

namespace titan::predict {

struct Interval {
  double start = 0, stop = 0;  // start < stop
  int32_t event = -1;          // -1 censored, else a cause (0, 1, ...)
  uint32_t cluster = 0;
};

// The distinct times at which some interval has an event, ascending.
std::vector<double> EventTimes(const std::vector<Interval>& data);

// Number at risk at each of `times` (ascending): intervals with start < t <= stop.
std::vector<double> AtRisk(const std::vector<Interval>& data, const std::vector<double>& times);

}  // namespace titan::predict
