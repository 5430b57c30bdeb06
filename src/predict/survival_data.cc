#include "src/predict/survival_data.h"

#include <algorithm>

namespace titan::predict {

std::vector<double> EventTimes(const std::vector<Interval>& data) {
  std::vector<double> t;
  for (const Interval& i : data) {
    if (i.event >= 0) t.push_back(i.stop);
  }
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

std::vector<double> AtRisk(const std::vector<Interval>& data, const std::vector<double>& times) {
  std::vector<double> starts, stops;
  starts.reserve(data.size());
  stops.reserve(data.size());
  for (const Interval& i : data) {
    starts.push_back(i.start);
    stops.push_back(i.stop);
  }
  std::sort(starts.begin(), starts.end());
  std::sort(stops.begin(), stops.end());
  std::vector<double> n(times.size());
  for (size_t k = 0; k < times.size(); ++k) {
    const double t = times[k];
    // #(stop >= t) - #(start >= t)
    auto stop_ge = stops.end() - std::lower_bound(stops.begin(), stops.end(), t);
    auto start_ge = starts.end() - std::lower_bound(starts.begin(), starts.end(), t);
    n[k] = static_cast<double>(stop_ge - start_ge);
  }
  return n;
}

}  // namespace titan::predict
