#include "src/collectors/collector_support.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/text.h"
#include "src/metrics/registry.h"

namespace titan::collectors_internal {
namespace {

const SignalDesc kReadingsDropped{
    "titan_collector_readings_dropped_total",
    "Counter readings a collector dropped, by reason (counter_reset: went backwards; "
    "counter_jump: grew faster than the field's physical bound).",
    SignalKind::kCounter,
    {"collector", "reason"},
    {}};

}  // namespace

template <OnDecrease kPolicy>
CounterStep BoundedCounter<kPolicy>::Advance(uint64_t reading, double max_per_second,
                                             int64_t interval_ns, uint64_t* delta) {
  *delta = 0;
  if (!seen) {
    seen = true;
    value = reading;
    total = static_cast<double>(reading);
    return CounterStep::kFirst;
  }
  const double bound =
      max_per_second * NsToSeconds(std::max<int64_t>(interval_ns, kMinBoundIntervalNs));
  const uint64_t previous = value;
  if (reading < previous) {
    if (kPolicy == OnDecrease::kHold && static_cast<double>(previous - reading) <= bound) {
      return CounterStep::kHeld;
    }
    if (kPolicy == OnDecrease::kRestart && static_cast<double>(reading) <= bound) {
      total += static_cast<double>(reading);
    }
    value = reading;
    return CounterStep::kRestarted;
  }
  value = reading;
  if (static_cast<double>(reading - previous) > bound) return CounterStep::kImplausible;
  *delta = reading - previous;
  total += static_cast<double>(*delta);
  return CounterStep::kDelta;
}

template struct BoundedCounter<OnDecrease::kRestart>;
template struct BoundedCounter<OnDecrease::kHold>;

void ReportDropped(const CollectorContext& ctx, std::string_view collector, DropReason reason,
                   std::string_view what) {
  if (ctx.registry != nullptr) {
    const char* name = reason == DropReason::kCounterReset ? "counter_reset" : "counter_jump";
    if (Series* s =
            ctx.registry->GetOrCreate(kReadingsDropped, {std::string(collector), name}, 0)) {
      s->AddCounter(WallNowNs(), 1);
    }
  }
  ReportInvalid(ctx, collector, what);
}

template <typename Counter>
bool AdvanceAll(const CollectorContext& ctx, std::string_view collector, std::string_view source,
                std::string_view device, size_t n, const uint64_t* readings,
                const double* max_per_second, int64_t interval_ns, Counter* counters,
                uint64_t* delta) {
  bool all = true, went_back = false, jumped = false;
  for (size_t i = 0; i < n; ++i) {
    const CounterStep step =
        counters[i].Advance(readings[i], max_per_second[i], interval_ns, &delta[i]);
    all &= step == CounterStep::kDelta || step == CounterStep::kHeld;
    went_back |= step == CounterStep::kRestarted || step == CounterStep::kHeld;
    jumped |= step == CounterStep::kImplausible;
  }
  if (went_back) {
    const bool resets = Counter::kOnDecrease == OnDecrease::kRestart;
    ReportDropped(ctx, collector, DropReason::kCounterReset,
                  fmt::format("{} counter of {} went backwards{}", source, device,
                              resets ? " (device reset?)" : ""));
  }
  if (jumped) {
    ReportDropped(ctx, collector, DropReason::kCounterJump,
                  fmt::format("{} counter of {} grew faster than physically possible; interval "
                              "dropped",
                              source, device));
  }
  return all;
}

template bool AdvanceAll(const CollectorContext&, std::string_view, std::string_view,
                         std::string_view, size_t, const uint64_t*, const double*, int64_t,
                         ResettableCounter*, uint64_t*);
template bool AdvanceAll(const CollectorContext&, std::string_view, std::string_view,
                         std::string_view, size_t, const uint64_t*, const double*, int64_t,
                         MonotonicCounter*, uint64_t*);

int ParseUintFields(std::string_view* rest, uint64_t* out, int max_fields, bool* bad) {
  int parsed = 0;
  while (parsed < max_fields) {
    const std::string_view field = NextField(rest);
    if (field.empty()) break;
    if (!ParseUint64(field, &out[parsed])) {
      *bad = true;
      break;
    }
    ++parsed;
  }
  return parsed;
}

}  // namespace titan::collectors_internal
