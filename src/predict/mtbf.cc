#include "src/predict/mtbf.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "src/fleet/time_text.h"

namespace titan::predict {

using fleet::Event;
using fleet::EventKind;

namespace {

// The start of the period holding t, and its name.
double PeriodStart(double t, Period period, std::string* name) {
  int y = 0, m = 0, d = 0;
  fleet::SecondsToCivil(t, &y, &m, &d);
  switch (period) {
    case Period::kMonth:
      *name = fmt::format("{:04d}-{:02d}", y, m);
      return fleet::CivilToSeconds(y, m, 1);
    case Period::kQuarter:
      *name = fmt::format("{:04d}-Q{}", y, (m - 1) / 3 + 1);
      return fleet::CivilToSeconds(y, (m - 1) / 3 * 3 + 1, 1);
    case Period::kYear:
      *name = fmt::format("{:04d}", y);
      return fleet::CivilToSeconds(y, 1, 1);
  }
  return 0;
}

double PeriodEnd(double start, Period period) {
  int y = 0, m = 0, d = 0;
  fleet::SecondsToCivil(start, &y, &m, &d);
  int months = period == Period::kMonth ? 1 : period == Period::kQuarter ? 3 : 12;
  m += months;
  while (m > 12) {
    m -= 12;
    ++y;
  }
  return fleet::CivilToSeconds(y, m, 1);
}

}  // namespace

std::vector<MtbfRow> MtbfPerPeriod(const fleet::FleetHistory& history, Period period,
                                   const std::vector<std::string>& classes,
                                   const std::string& group_key) {
  std::vector<bool> counted(history.failure_classes().size(), classes.empty());
  for (size_t i = 0; i < counted.size(); ++i) {
    if (std::find(classes.begin(), classes.end(), history.failure_classes()[i]) != classes.end()) {
      counted[i] = true;
    }
  }
  std::vector<MtbfRow> rows;
  const double begin = history.begin_seconds(), end = history.end_seconds();
  for (double t = begin; t < end;) {
    MtbfRow r;
    const double start = PeriodStart(t, period, &r.period);
    const double stop = PeriodEnd(start, period);
    r.begin_seconds = std::max(start, begin);
    r.end_seconds = std::min(stop, end);
    r.hours = (r.end_seconds - r.begin_seconds) / 3600;
    rows.push_back(std::move(r));
    t = stop;
  }
  if (rows.empty()) return rows;
  // Components in service over time, and each one's current attributes.
  const size_t n = history.components().size();
  std::vector<const fleet::Attributes*> stay_attributes(n, nullptr);
  std::vector<bool> in_service(n, false);
  double service_count = 0, last_t = begin;
  size_t row = 0;
  std::vector<double> service_seconds(rows.size(), 0.0);
  auto advance = [&](double to) {  // integrates the in-service count up to `to`
    while (last_t < to && row < rows.size()) {
      const double seg_end = std::min(to, rows[row].end_seconds);
      service_seconds[row] += service_count * (seg_end - last_t);
      last_t = seg_end;
      if (last_t >= rows[row].end_seconds) ++row;
    }
  };
  const std::string kNone = "NA";
  size_t fail_row = 0;
  for (const Event& e : history.events()) {
    advance(e.time_seconds);
    if (e.kind == EventKind::kEnter) {
      if (!in_service[e.component]) service_count += 1;
      in_service[e.component] = true;
      stay_attributes[e.component] = &e.attributes;
    } else if (e.kind == EventKind::kLeave) {
      if (in_service[e.component]) service_count -= 1;
      in_service[e.component] = false;
    } else if (e.kind == EventKind::kFail && counted[e.failure_class]) {
      while (fail_row + 1 < rows.size() && e.time_seconds >= rows[fail_row].end_seconds) {
        ++fail_row;
      }
      MtbfRow& r = rows[fail_row];
      ++r.failures;
      if (!group_key.empty()) {
        const std::string* v = nullptr;
        if (stay_attributes[e.component])
          v = fleet::FindAttribute(*stay_attributes[e.component], group_key);
        if (!v) v = fleet::FindAttribute(history.components()[e.component].attributes, group_key);
        ++r.failures_by_group[v ? *v : kNone];
      }
    }
  }
  advance(end);
  for (size_t i = 0; i < rows.size(); ++i) {
    MtbfRow& r = rows[i];
    r.mtbf_hours = r.failures > 0 ? r.hours / static_cast<double>(r.failures)
                                  : std::numeric_limits<double>::infinity();
    const double span = r.end_seconds - r.begin_seconds;
    r.in_service = span > 0 ? service_seconds[i] / span : 0;
  }
  return rows;
}

}  // namespace titan::predict
