// What a signal is: its Prometheus family name, help, kind and label names.
//
// Naming (DESIGN.md rule 6): base units in the name: `titan_cpu_utilization_ratio`,
// `titan_memory_used_bytes`, `titan_disk_written_bytes_total`, `titan_step_duration_seconds`.
// A gauge is an instantaneous reading (utilisation, bytes in use, a step time); for each gauge
// the exposition adds the window statistics and a histogram of the samples. A counter is a
// cumulative total that only grows (`..._total`).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace titan {

enum class SignalKind { kGauge, kCounter };

struct SignalDesc {
  std::string name;  // Prometheus family name; counters end in "_total"
  std::string help;  // one line; no newline
  SignalKind kind = SignalKind::kGauge;
  std::vector<std::string> label_names;
  // Histogram bucket upper bounds for gauges, ascending, without +Inf. Empty: no histogram.
  std::vector<double> buckets;
  // Whether detectors are attached to this gauge by default (see detect/).
  bool detect = false;
};

// Label values, in the order of SignalDesc::label_names.
using LabelValues = std::vector<std::string>;

// Common bucket layouts.
std::vector<double> RatioBuckets();                 // 0.05 .. 1.0
std::vector<double> SecondsBuckets();               // 1 ms .. 60 s, roughly x2.5
std::vector<double> BytesBuckets();                 // 4 KiB .. 64 GiB, x4
std::vector<double> RateBuckets(double max_value);  // 12 buckets, log-spaced up to max_value

}  // namespace titan
