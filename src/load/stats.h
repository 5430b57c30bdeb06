// Statistics of one load run, computed from its records: latency distributions measured both
// from the planned send time (coordinated-omission free: what a user arriving at that moment
// felt) and from the actual send (what most tools report), throughput, errors by class, the
// schedule's lag and whether the run is valid, SLO gates and goodput (DistServe: requests per
// second that met every per-request SLO), and a per-second timeline.
//
// Percentiles are exact (nearest-rank over the records) except the inter-token gaps when
// their exact buffer was truncated (then from the HDR histogram, within 0.1%).
//
// Thread safety: pure functions over immutable inputs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/load/record.h"
#include "src/load/runner.h"

namespace titan::load {

// Latency metrics an SLO can name.
enum class Metric { kTtft, kItl, kTpot, kE2e };
std::string_view MetricName(Metric metric);

// Nearest-rank summary of a set of durations (ns).
struct Distribution {
  uint64_t count = 0;
  double mean = 0;
  int64_t min = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0, max = 0;
  // The value at quantile q in [0, 1] (the same rule as the fields).
  int64_t At(double q) const;
  std::vector<int64_t> sorted;  // kept for At(); empty when built from a histogram
  // (quantile, value) at kCurveQuantiles: the whole distribution for plots (titan report).
  std::vector<std::pair<double, int64_t>> curve;
};
// 0, 0.05 .. 0.95, 0.97, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999, 1: denser in the tail.
extern const std::vector<double> kCurveQuantiles;
Distribution Summarize(std::vector<int64_t> values);
Distribution Summarize(const LatencyHistogram& histogram);

// One gate of an SLO: "p99_ttft=500ms" is {kTtft, 0.99, 500 ms}; "errors=1%" is an error-rate
// gate (metric ignored, max_error_rate set).
struct SloGate {
  Metric metric = Metric::kTtft;
  double quantile = 0.99;  // 0.5 .. 0.999, or 1 for max; -1 for the mean
  int64_t threshold_ns = 0;
  bool is_error_rate = false;
  double max_error_rate = 0;
  std::string text;  // as written
};
struct Slo {
  std::vector<SloGate> gates;
  // Per-request thresholds for goodput (the strictest threshold given per metric); 0 = none.
  int64_t ttft_ns = 0, itl_ns = 0, tpot_ns = 0, e2e_ns = 0;
  bool empty() const { return gates.empty(); }
  // Whether one request meets every per-request threshold (errors never do). The request's
  // ITL is checked by its largest gap.
  bool Met(const RequestRecord& record, const RunRecords& run) const;
};
// "p99_ttft=500ms,p99_itl=50ms,p50_e2e=2s,mean_tpot=20ms,errors=1%". Quantiles p50, p90, p95,
// p99, p999 (99.9), max, mean; metrics ttft, itl, tpot, e2e. Errors list the accepted forms.
Result<Slo> ParseSlo(std::string_view text);

struct GateResult {
  SloGate gate;
  double measured = 0;  // ns (or the error rate for an error-rate gate)
  bool passed = false;
};

struct SecondBucket {
  int64_t second = 0;
  uint64_t planned = 0;    // requests planned to start in this second
  uint64_t completed = 0;  // answers that ended in this second
  uint64_t errors = 0;
  uint64_t in_flight_max = 0;
  uint64_t output_tokens = 0;  // tokens of answers completed in this second
  int64_t ttft_p50_ns = 0;     // corrected TTFT of requests that ended in this second
  int64_t ttft_p99_ns = 0;
};

struct Summary {
  double duration_s = 0;  // schedule length (--duration, else first to last planned send)
  double elapsed_s = 0;   // until the last answer
  uint64_t planned = 0, completed_ok = 0, failed = 0;
  std::array<uint64_t, kRequestErrorCount> errors_by_class{};
  double offered_rate = 0;   // planned / duration
  double achieved_rate = 0;  // ok answers / elapsed
  double output_tokens_per_s = 0, peak_output_tokens_per_s = 0, input_tokens_per_s = 0;
  uint64_t prompt_tokens = 0, output_tokens = 0;
  TokenSource tokens_from = TokenSource::kPlanned;  // of the majority of ok records
  // From the planned send (coordinated-omission free) and from the actual send.
  Distribution ttft, ttft_from_send, e2e, e2e_from_send, itl, tpot;
  Distribution schedule_lag;  // dispatched - planned
  Distribution queue_wait;    // slot - dispatched (the wait under --max-concurrency)
  bool itl_from_histogram = false;
  bool streamed = false;
  // Validity: a run whose schedule lag p99 is over the bound measured the client, not the
  // server.
  int64_t lag_bound_ns = 0;  // the bound applied (auto resolved)
  bool valid = true;
  std::vector<std::string> invalid_reasons;
  std::vector<GateResult> gates;
  bool slo_passed = true;
  double slo_attainment = 0;  // fraction of planned requests that met every per-request SLO
  double goodput_rps = 0;     // those per second of schedule
  std::vector<SecondBucket> timeline;
  double client_cpu_seconds = 0;
};

struct SummaryOptions {
  // Schedule lag p99 over this makes the run invalid. 0 (auto): 1% of the run's median
  // corrected latency (TTFT when streamed, else E2E), at least 5 ms: the lag then distorts what
  // was measured by at most about 1% (or 5 ms for very fast answers; set a bound to be
  // stricter).
  int64_t lag_bound_ns = 0;
  Slo slo;
};

Summary Summarize(const RunRecords& run, const SummaryOptions& options);

}  // namespace titan::load
