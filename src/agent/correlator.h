// Correlator: turns a bare Detection into a TransientEvent a person can act on, by finding what
// else happened at the same moment: other signals that moved in the same window (judged against
// their own recent baseline from the flight recorder) and application events just before or
// during it (a checkpoint_begin 30 ms before a step-time spike).
//
// Example summary: "step 812 on rank 3 took 1.24 s, +240 ms over its baseline (4.1 sigma);
// titan_disk_write_bytes_per_second{device="nvme0"} rose to 2.1 GB/s (baseline 3 MB/s);
// checkpoint_begin (rank 0, step 800) 30 ms before".
//
// An event with several members (the same family moving on several ranks together, see
// TransientPipeline) is said once: "all 4 ranks slow at steps 40-41: a common cause, not a
// straggler; slowest: step 41 on rank 2 took ..."), unless one of those ranks was late against
// its peers meanwhile (titan_straggler_score{rank} above 3: "rank 3 late against its peers
// (straggler score 5.0): a straggler holding the others"). A slow step on one rank of several is
// said to be that rank's alone ("rank 3 alone of 4 ranks: a straggler").
//
// What moved is ranked by how well it lines up with the transient: anything from the begin of
// the first slow step (the start, for other signals) to the end lines up fully; earlier, less
// and less over lookbehind_ns. Equal alignment: application events first, then signals by
// sigma. At most max_related are named. Routine application events are left out: a kind and name
// (a mark 'compute') that a rank sent in at least routine_share of its steps over the
// routine_lookback_ns before the transient is the rhythm of training, not a cause; the same event
// from several ranks at one step is named once ("checkpoint_begin (ranks 0-3, step 40) 30 ms
// before").
//
// Thread safety: Explain() is thread-safe (reads the registry and log under their locks).
#pragma once

#include <span>
#include <string>

#include "src/agent/event_log.h"
#include "src/metrics/registry.h"

namespace titan {

struct CorrelatorOptions {
  int64_t lookbehind_ns = 1'000'000'000;  // events/movements this long before the start count
  int64_t baseline_ns = 10'000'000'000;   // baseline window before that, per other signal
  double min_sigma = 4.0;                 // how far another signal must move to be named
  size_t max_related = 3;                 // signals and application events named, at most
  int64_t routine_lookback_ns = 60'000'000'000;  // steps judged for routine events
  double routine_share = 0.8;                    // of a rank's steps that have the event
  int64_t routine_min_steps = 5;                 // fewer steps: nothing is judged routine
};

class Correlator {
 public:
  Correlator(const MetricRegistry& registry, const EventLog& log, CorrelatorOptions options = {});
  // Fills event->related and event->summary. sources[i] is the series of event->members[i]
  // (same size, non-null); event->detection spans every member's.
  void Explain(std::span<const Series* const> sources, TransientEvent* event) const;
  // One series: event->members becomes that series with event->detection.
  void Explain(const Series& source, TransientEvent* event) const;

 private:
  const MetricRegistry& registry_;
  const EventLog& log_;
  const CorrelatorOptions options_;
};

// Formats a value by the unit its signal name ends with: "_seconds" -> "240 ms",
// "_ratio" -> "97.0 %", "_bytes" / "_bytes_per_second" -> "2.1 GB" / "2.1 GB/s", else "%g".
std::string FormatSignalValue(std::string_view signal_name, double value);

// Sorted ranks as runs: {0, 1, 2, 3, 5} -> "0-3, 5".
std::string FormatRanks(std::span<const int32_t> sorted_ranks);

// The series' rank label as a number, or -1 without one.
int32_t RankOf(const Series& series);

}  // namespace titan
