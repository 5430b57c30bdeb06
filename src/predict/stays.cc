#include "src/predict/stays.h"

#include <limits>

namespace titan::predict {

using fleet::Event;
using fleet::EventKind;

StayTable BuildStays(const fleet::FleetHistory& history) {
  StayTable t;
  const size_t n = history.components().size();
  struct State {
    bool in_service = false;
    double first_enter = std::numeric_limits<double>::quiet_NaN();
    double start = 0;
    int32_t attributes = -1;
    int32_t failures = 0;
  };
  std::vector<State> state(n);
  size_t enters = 0;
  for (const Event& e : history.events()) enters += e.kind == EventKind::kEnter;
  t.attribute_sets.reserve(enters);  // Stay::attributes point into it: no reallocation
  auto close = [&](uint32_t c, double at, int32_t cls) {
    State& s = state[c];
    if (at > s.start) {
      Stay st;
      st.component = c;
      st.start_seconds = s.start;
      st.stop_seconds = at;
      st.start_age_seconds = s.start - s.first_enter;
      st.stop_age_seconds = at - s.first_enter;
      st.event_class = cls;
      st.prior_failures = s.failures;
      st.attributes = &t.attribute_sets[s.attributes];
      t.stays.push_back(st);
    }
  };
  for (const Event& e : history.events()) {
    State& s = state[e.component];
    switch (e.kind) {
      case EventKind::kEnter:
        if (s.in_service) close(e.component, e.time_seconds, -1);
        if (s.first_enter != s.first_enter) s.first_enter = e.time_seconds;
        s.in_service = true;
        s.start = e.time_seconds;
        t.attribute_sets.push_back(
            fleet::MergeAttributes(history.components()[e.component].attributes, e.attributes));
        s.attributes = static_cast<int32_t>(t.attribute_sets.size() - 1);
        break;
      case EventKind::kFail:
        if (!s.in_service) {
          ++t.failures_out_of_service;
          break;
        }
        close(e.component, e.time_seconds, static_cast<int32_t>(e.failure_class));
        ++s.failures;
        s.start = e.time_seconds;
        break;
      case EventKind::kLeave:
        if (s.in_service) close(e.component, e.time_seconds, -1);
        s.in_service = false;
        break;
      case EventKind::kRepair:
      case EventKind::kObserve:
        break;
    }
  }
  for (uint32_t c = 0; c < n; ++c) {
    if (state[c].in_service) close(c, history.end_seconds(), -1);
  }
  return t;
}

std::vector<Stay> FirstFailureStays(const std::vector<Stay>& stays) {
  std::vector<Stay> out;
  out.reserve(stays.size());
  for (const Stay& s : stays) {
    if (s.prior_failures == 0) out.push_back(s);
  }
  return out;
}

}  // namespace titan::predict
