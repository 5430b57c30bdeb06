// HTA-compatible analyses (--hta-compat): Holistic Trace Analysis' temporal breakdown, kernel
// type breakdown, kernel breakdown (top kernels), idle time breakdown with interval statistics,
// and communication/computation overlap, computed with HTA's definitions so that the numbers
// match HTA's CSVs (HTA v0.6.1) to the printed precision:
//  - events: those HTA's parser keeps (with a `cat` other than "Trace"); its trace filter keeps
//    CPU events that start before the last ProfilerStep#N, and GPU events (a `stream` and a
//    `correlation`, or an "Event Sync"/"Context Sync") once per kept CPU event with the same
//    `correlation`; without two distinct ProfilerStep#N names nothing is filtered. (HTA filters
//    MTIA traces with several steps another way, which is not reproduced.) Kernel tables and the
//    temporal breakdown use the kept events with a stream; the idle time breakdown only those of
//    the kernel, memcpy, memset and MTIA categories;
//  - times: microseconds; when pandas would hold `ts` as float64, starts are rounded up and ends
//    down to whole microseconds (so durations can become negative, as in HTA);
//  - classes: HTA's name patterns (see kernel_class.h).
// All per rank; ranks are independent, so they can be computed in parallel and merged.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/trace/model.h"

namespace titan::trace {

struct HtaOptions {
  double consecutive_kernel_delay_us = 30.0;  // HTA's default threshold for "kernel wait"
  int num_kernels = 10;                       // top kernels per type before "others"
  double duration_ratio = 0.8;
};

struct HtaKernelRow {
  std::string name;
  double sum_us = 0, max_us = 0, min_us = 0, stddev = 0, mean_us = 0;
  std::string kernel_type;
  int rank = 0;
};

struct HtaIdleRow {
  int64_t stream = 0;
  int category = 0;  // 0 host_wait, 1 kernel_wait, 2 other
  double idle_time_us = 0;
  double ratio = 0;  // NaN when the stream had no idle time at all
};

struct HtaIdleStatsRow {
  int64_t stream = 0;
  int category = 0;
  double count = 0, mean = 0, std = 0, min = 0, p25 = 0, p50 = 0, p75 = 0, max = 0;  // NaN: empty
};

struct HtaRankResult {
  int rank = 0;
  bool filtered = false;  // HTA's last-step filter applied
  // HTA's durations are int64 in pandas (every event has an integer ts and dur, or ts and dur
  // after HTA's rounding): its CSVs then print the times of the temporal breakdown and the
  // kernel sums, maxima and minima as integers ("45", not "45.0").
  bool integer_times = false;
  // Temporal breakdown (microseconds) and percentages.
  double idle_us = 0, compute_us = 0, non_compute_us = 0, kernel_us = 0;
  double idle_pct = 0, compute_pct = 0, non_compute_pct = 0;
  // Kernel type time per label ("COMPUTATION", "COMPUTATION overlapping COMMUNICATION", ...),
  // whole microseconds as HTA sums them.
  std::vector<std::pair<std::string, int64_t>> kernel_type_us;
  std::vector<HtaKernelRow> kernels;
  std::vector<HtaIdleRow> idle;
  std::vector<HtaIdleStatsRow> idle_stats;
  double comm_comp_overlap_pct = 0;  // NaN without communication
};

// HTA's results for one rank.
HtaRankResult ComputeHtaRank(const RankTrace& trace, const HtaOptions& options);

struct HtaKernelTypeRow {
  std::string kernel_type;
  int64_t sum_us = 0;
  double percentage = 0;
};

// HTA's kernel type table over all ranks, sorted as HTA sorts it.
std::vector<HtaKernelTypeRow> HtaKernelTypeTable(const std::vector<HtaRankResult>& ranks);

// Writes HTA's six CSVs into `dir` as <prefix>.temporal_breakdown.csv, .kernel_type_breakdown,
// .kernel_breakdown, .idle_time_breakdown, .idle_interval_stats, .comm_comp_overlap.
Status WriteHtaCsvs(const std::vector<HtaRankResult>& ranks, const std::string& dir,
                    const std::string& prefix);

// Python's repr() of a float, as pandas writes it to CSV ("" for NaN).
std::string PyFloat(double v);
// numpy's round(x, decimals): rint(x * 10^d) / 10^d.
double NpRound(double v, int decimals);

}  // namespace titan::trace
