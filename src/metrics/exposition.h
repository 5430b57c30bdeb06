// Renders a MetricRegistry as Prometheus text format 0.0.4 or OpenMetrics 1.0.0.
//
// For every gauge family NAME the output has, per series:
//   NAME                 the last sample
//   NAME_window_min      min of the samples in the window (also _window_max, _window_mean)
//   NAME_samples         a histogram (buckets, sum, count) of every sample, when buckets are set
// so that a 50 ms spike between two 15 s scrapes is still seen in NAME_window_max.
// Counters are written as they are. Gauge series with no sample in the last `stale_after_ns`
// (a process that exited) are left out.
//
// Thread safety: reads the registry under its locks; safe concurrently with sampling.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/metrics/registry.h"

namespace titan {

enum class ExpositionFormat { kPrometheusText, kOpenMetrics };

struct ExpositionOptions {
  ExpositionFormat format = ExpositionFormat::kPrometheusText;
  int window_seconds = 15;
  int64_t now_ns = 0;                              // wall clock of the scrape
  int64_t stale_after_ns = 120LL * 1'000'000'000;  // gauges not sampled for this long are omitted
};

// Appends Prometheus text for exporters that hold plain values rather than a registry's series
// (titan run's ledger and gauges), formatted as RenderExposition formats them: a family's
// HELP and TYPE lines, then its samples, label values escaped. Writes into a caller-owned
// string; not thread-safe.
class ExpositionWriter {
 public:
  explicit ExpositionWriter(std::string* out) : out_(out) {}
  // Starts family `name` of `type` ("gauge" or "counter").
  ExpositionWriter& Family(std::string_view name, std::string_view type, std::string_view help);
  // One sample of the current family, with at most one label.
  ExpositionWriter& Sample(double value, std::string_view label = {},
                           std::string_view label_value = {});

 private:
  std::string* out_;
  std::string name_;
};

// Appends the exposition of every family to *out.
void RenderExposition(const MetricRegistry& registry, const ExpositionOptions& options,
                      std::string* out);

// Picks the format from an HTTP Accept header (OpenMetrics when it is asked for).
ExpositionFormat NegotiateFormat(std::string_view accept_header);
// The Content-Type to send with that format.
std::string_view ContentType(ExpositionFormat format);

}  // namespace titan
