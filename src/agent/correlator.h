// Correlator: turns a bare Detection into a TransientEvent a person can act on, by finding what
// else happened at the same moment: other signals that moved in the same window (judged against
// their own recent baseline from the flight recorder) and application events just before or
// during it (a checkpoint_begin 30 ms before a step-time spike).
//
// Example summary: "step 812 on rank 3 took 1.24 s, +240 ms over its baseline (4.1 sigma);
// titan_disk_write_bytes_per_second{device="nvme0"} rose to 2.1 GB/s (baseline 3 MB/s);
// checkpoint_begin (rank 0, step 800) 30 ms before".
//
// Thread safety: Explain() is thread-safe (reads the registry and log under their locks).
#pragma once

#include <string>

#include "src/agent/event_log.h"
#include "src/metrics/registry.h"

namespace titan {

struct CorrelatorOptions {
  int64_t lookbehind_ns = 1'000'000'000;  // events/movements this long before the start count
  int64_t baseline_ns = 10'000'000'000;   // baseline window before that, per other signal
  double min_sigma = 4.0;                 // how far another signal must move to be named
  size_t max_related = 5;
};

class Correlator {
 public:
  Correlator(const MetricRegistry& registry, const EventLog& log, CorrelatorOptions options = {});
  // Fills event->related and event->summary from `source` (the detecting series) and
  // event->detection.
  void Explain(const Series& source, TransientEvent* event) const;

 private:
  const MetricRegistry& registry_;
  const EventLog& log_;
  const CorrelatorOptions options_;
};

// Formats a value by the unit its signal name ends with: "_seconds" -> "240 ms",
// "_ratio" -> "97.0 %", "_bytes" / "_bytes_per_second" -> "2.1 GB" / "2.1 GB/s", else "%g".
std::string FormatSignalValue(std::string_view signal_name, double value);

}  // namespace titan
