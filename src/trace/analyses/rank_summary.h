// titan's own per-rank analysis (the default): for each profiler step, where the rank's time went
// (compute, communication not hidden by compute, memory copies/sets not hidden by either, idle),
// the largest idle gaps with what the CPU was doing, kernel launch delays, the collectives the
// rank took part in (for cross-rank matching) and a one-line verdict with its evidence.
//
// Steps are the ProfilerStep#N spans: step i runs from its start to the start of step i+1 (the
// last one to the end of its CPU span or of the GPU work it launched, whichever is later).
// GPU traces are analysed on the GPU timeline (all streams together); CPU-only traces (the legacy
// profiler, gloo) on the thread that runs the steps.
// A RankSummary is small (no per-event data), so many ranks can be kept at once.
// Thread safety: pure function of its input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "src/trace/model.h"

namespace titan::trace {

struct SummaryOptions {
  int top_gaps = 5;
};

struct StepBreakdown {
  std::string name;  // "ProfilerStep#5" or "trace" when the trace has no steps
  int64_t number = -1;
  int64_t begin_ns = 0;  // rank-local trace time (see RankSummary::epoch_offset_ns)
  int64_t end_ns = 0;
  int64_t compute_ns = 0;
  int64_t exposed_comm_ns = 0;
  int64_t exposed_mem_ns = 0;
  int64_t idle_ns = 0;
  int64_t wall_ns() const { return end_ns - begin_ns; }
};

struct IdleGap {
  int64_t begin_ns = 0;
  int64_t length_ns = 0;
  int64_t step = -1;
  std::string next_op;               // the GPU op (or CPU op) that ended the gap
  std::string launched_by;           // innermost CPU op around its launch, "" if unknown
  std::string cpu_before;            // innermost CPU op running on that thread when the gap began
  int64_t launch_after_gap_ns = -1;  // launch call start minus gap start (host late by this)
};

struct CollectiveCall {
  std::string process_group;  // "Process Group Name" or "default"
  std::string collective;     // normalised ("allreduce", ...)
  int64_t seq = -1;           // from the trace when present
  int64_t ordinal = 0;        // index among this rank's calls with the same group+collective
  int64_t start_ns = 0;       // rank-local trace time
  int64_t end_ns = 0;
  int64_t step = -1;
  int64_t elements = -1;  // "In msg nelems" when the trace has it
};

struct Distribution {
  int64_t count = 0;
  int64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
};

struct RankSummary {
  int rank = -1;
  int world_size = -1;  // distributedInfo.world_size; -1 when the trace does not say
  std::string path;
  TraceFormat format = TraceFormat::kKineto;
  bool has_gpu = false;
  bool wall_clock = false;
  int64_t epoch_offset_ns = 0;
  uint64_t input_bytes = 0;
  uint64_t ops = 0;
  std::vector<std::string> warnings;
  ImportStats stats;

  std::vector<StepBreakdown> steps;
  StepBreakdown total;  // sums over steps
  std::vector<IdleGap> top_gaps;
  Distribution launch_delay;  // GPU start minus launch call start
  int64_t dataloader_ns = 0;  // time in DataLoader ops within the steps
  std::vector<CollectiveCall> collectives;
  std::string verdict;   // "GPU-bound", "communication-bound", "host-bound", ...
  std::string evidence;  // why
};

RankSummary SummariseRank(const RankTrace& trace, const SummaryOptions& options);

}  // namespace titan::trace
