// Small pieces shared by the /proc and /sys collectors: null-tolerant series writes (the
// registry returns nullptr once max_series is reached), counter deltas with an explicit policy for
// counters that go backwards, rates, a desc builder, and a table of per-device state that is
// pruned when devices vanish.
//
// Thread safety: none of these types lock; each collector owns its instances on its sampling
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "src/base/env.h"
#include "src/base/status.h"
#include "src/collectors/collector.h"
#include "src/metrics/series.h"
#include "src/metrics/signal.h"

namespace titan::collectors_internal {

inline void SetCounter(Series* series, int64_t time_ns, double source_total) {
  if (series != nullptr) series->SetCounter(time_ns, source_total);
}
inline void RecordGauge(Series* series, int64_t time_ns, double value) {
  if (series != nullptr) series->RecordGauge(time_ns, value);
}

// Desc builders. Collectors keep their descs in a function-local static that is never destroyed
// (the registry holds pointers to descs for its whole life).
inline SignalDesc CounterDesc(std::string name, std::string help,
                              std::vector<std::string> label_names = {}) {
  return SignalDesc{
      std::move(name), std::move(help), SignalKind::kCounter, std::move(label_names), {}, false};
}
inline SignalDesc GaugeDesc(std::string name, std::string help,
                            std::vector<std::string> label_names, std::vector<double> buckets,
                            bool detect = false) {
  return SignalDesc{std::move(name),        std::move(help),    SignalKind::kGauge,
                    std::move(label_names), std::move(buckets), detect};
}

// Reports a rejected reading through ctx.invalid_sample when one is set.
inline void ReportInvalid(const CollectorContext& ctx, std::string_view collector,
                          std::string_view what) {
  if (ctx.invalid_sample) ctx.invalid_sample(collector, what);
}

// Physical bounds shared by several collectors' counters, per second.
// Storage: 32 PCIe 5 NVMe drives at full speed; I/Os of any size at that rate.
inline constexpr double kMaxStorageBytesPerSecond = 4e11;
inline constexpr double kMaxStorageOpsPerSecond = 1e8;
// CPU time: one CPU runs at most 1 s per second; twice that leaves room for a reading taken late.
inline constexpr double kMaxCpuSecondsPerCpuSecond = 2;
// A bound covers at least this much time, so that a reading taken late on a loaded machine (the
// interval is measured from when sampling started) is not taken for a glitch.
inline constexpr int64_t kMinBoundIntervalNs = 1'000'000'000;

// How one reading of a counter moved.
enum class CounterStep {
  kFirst,        // the first reading: no delta yet
  kDelta,        // *delta is the increase since the previous reading
  kHeld,         // a little below the previous reading (MonotonicCounter only): *delta is 0
  kRestarted,    // below the previous reading: the next reading is measured from this one
  kImplausible,  // more than the field's physical bound allows since the previous reading
};

// What a counter takes a reading below the previous one for.
enum class OnDecrease {
  kRestart,  // the device was re-created and counts from zero
  kHold,     // the counter only resets with the machine
};

// A kernel counter checked against `max_per_second`, the most the field can physically grow per
// second (a documented bound per field, e.g. bytes of 4 x 400 Gbit/s links), over the interval
// (at least kMinBoundIntervalNs):
//  - an increase beyond the bound is a glitch (a driver reporting 2^64-1): no delta for the
//    interval, nothing added to the total, and the next reading is measured from this one, so a
//    counter that really jumped costs one interval, not all later ones;
//  - a decrease, with OnDecrease::kRestart (ResettableCounter: a network interface, a disk, an
//    HCA port), is a restart from zero: no delta for the interval; the reading is added to the
//    total when it is itself plausible; the next reading is measured from this one;
//  - a decrease, with OnDecrease::kHold (MonotonicCounter: CPU times, vmstat, a process' CPU
//    time, PSI totals), of at most the bound is a kernel wobble (iowait steps back on NO_HZ
//    kernels): kHeld, delta 0, and the previous reading stays the base until the counter passes
//    it; a larger decrease means this reading or the previous one was a glitch: kRestarted,
//    nothing added, the next reading is measured from this one.
// `total` (first reading + plausible increases) is what callers export: it never goes backwards
// and never takes a glitch in, and one glitch costs at most two intervals.
template <OnDecrease kPolicy>
struct BoundedCounter {
  static constexpr OnDecrease kOnDecrease = kPolicy;
  uint64_t value = 0;  // the base of the next delta: the last reading, or the one held
  double total = 0;
  bool seen = false;
  CounterStep Advance(uint64_t reading, double max_per_second, int64_t interval_ns,
                      uint64_t* delta);
};
using ResettableCounter = BoundedCounter<OnDecrease::kRestart>;
using MonotonicCounter = BoundedCounter<OnDecrease::kHold>;

// Why a collector dropped a reading, for titan_collector_readings_dropped_total{collector,reason}.
enum class DropReason { kCounterReset, kCounterJump };

// Counts a dropped reading by reason and reports it through ReportInvalid (which counts it in
// titan_collector_invalid_samples_total and logs `what`, rate-limited).
void ReportDropped(const CollectorContext& ctx, std::string_view collector, DropReason reason,
                   std::string_view what);

// Advances `counters[i]` with `readings[i]` (bounds `max_per_second[i]`) over `interval_ns`, for
// each of the n fields of one device; sets delta[i] and returns whether every field has a delta
// (kDelta, or kHeld with delta 0). Decreases and glitches are reported once per call
// (ReportDropped: counter_reset, counter_jump), naming `source` (the file, e.g. "net/dev") and
// `device`. Allocates only to report. Defined for ResettableCounter and MonotonicCounter.
template <typename Counter>
bool AdvanceAll(const CollectorContext& ctx, std::string_view collector, std::string_view source,
                std::string_view device, size_t n, const uint64_t* readings,
                const double* max_per_second, int64_t interval_ns, Counter* counters,
                uint64_t* delta);

// AdvanceAll for one field (`field` names it in reports).
inline bool AdvanceOne(const CollectorContext& ctx, std::string_view collector,
                       std::string_view source, std::string_view field, uint64_t reading,
                       double max_per_second, int64_t interval_ns, MonotonicCounter* counter,
                       uint64_t* delta) {
  return AdvanceAll(ctx, collector, source, field, 1, &reading, &max_per_second, interval_ns,
                    counter, delta);
}

// Per-second rate of `delta` over `interval_ns`; false when the interval is not positive.
inline bool RatePerSecond(double delta, int64_t interval_ns, double* out) {
  if (interval_ns <= 0) return false;
  *out = delta * 1e9 / static_cast<double>(interval_ns);
  return true;
}

// Whether `ratio` is a plausible share of an interval: within [0, 1 + slack]. Busy times from the
// kernel are counted in ticks, so a reading over a short interval can exceed the interval by up to
// one tick; callers clamp such readings to 1 and reject the rest.
inline bool PlausibleRatio(double ratio, double slack) { return ratio >= 0 && ratio <= 1 + slack; }

// Reads `reader`'s file and parses it with `parse(text, out)`; errors name the file.
template <typename Out, typename Parse>
Status ReadAndParse(FileReader& reader, Parse parse, Out* out) {
  Result<std::string_view> text = reader.Read();
  if (!text.ok()) return text.status();
  return parse(*text, out).WithContext(reader.path());
}

// Parses up to `max_fields` whitespace-separated unsigned numbers from *rest into out[] and
// returns how many it parsed; stops at the first field that is not a number (setting *bad) or at
// the end of the text. Fields beyond max_fields are left in *rest (newer kernels add columns).
int ParseUintFields(std::string_view* rest, uint64_t* out, int max_fields, bool* bad);

// Heterogeneous string hashing so that lookups by string_view do not allocate.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

// State per device name (interface, disk), created on first sight and dropped when a round no
// longer lists the device. Lookups of known devices do not allocate.
template <typename Entry>
class DeviceTable {
 public:
  explicit DeviceTable(size_t max_entries) : max_entries_(max_entries) {}

  // Starts a sampling round.
  void BeginRound() { ++round_; }
  // The entry for `name`, or nullptr when it is new and the table is full. `*created` is set
  // when the entry was made in this call (the caller then resolves its series).
  Entry* Find(std::string_view name, bool* created) {
    *created = false;
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      if (entries_.size() >= max_entries_) return nullptr;
      it = entries_.emplace(std::string(name), Slot{}).first;
      *created = true;
    }
    it->second.round = round_;
    return &it->second.entry;
  }
  // Forgets devices not seen since BeginRound().
  void EndRound() {
    std::erase_if(entries_, [this](const auto& item) { return item.second.round != round_; });
  }
  size_t size() const { return entries_.size(); }

 private:
  struct Slot {
    Entry entry;
    uint64_t round = 0;
  };
  const size_t max_entries_;
  uint64_t round_ = 0;
  std::unordered_map<std::string, Slot, StringHash, std::equal_to<>> entries_;
};

}  // namespace titan::collectors_internal
