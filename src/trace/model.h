// The compact in-memory model of one rank's profiler trace, shared by every importer and every
// analysis. An importer turns one file into one RankTrace; analyses read RankTraces and keep only
// small per-rank summaries, so memory stays bounded by the ranks being processed at once.
//
// Time: integer nanoseconds throughout. `Op::ts_ns` is the event's timestamp exactly as written
// in the file, times 1000 (Kineto writes microseconds, possibly with 3 decimals); add
// `RankTrace::epoch_offset_ns` to get nanoseconds since the Unix epoch where the trace has a wall
// clock (Kineto), or to a per-process origin otherwise (the legacy autograd profiler).
// Thread safety: plain data; a RankTrace is built by one thread and then only read.
#pragma once

#include <climits>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace titan::trace {

// What an event is, from its Kineto category (`cat`).
enum class EventKind : uint8_t {
  kCpuOp,              // cpu_op (aten ops, record_param_comms, ...)
  kUserAnnotation,     // user_annotation (record_function, ProfilerStep#N)
  kPythonFunction,     // python_function
  kCudaRuntime,        // cuda_runtime (cudaLaunchKernel, cudaMemcpyAsync, ...)
  kCudaDriver,         // cuda_driver (cuLaunchKernel, ...)
  kCudaSync,           // cuda_sync
  kKernel,             // kernel
  kGpuMemcpy,          // gpu_memcpy
  kGpuMemset,          // gpu_memset
  kGpuUserAnnotation,  // gpu_user_annotation
  kMtiaCcpEvent,       // mtia_ccp_events (MTIA device work; used by --hta-compat only)
  kOther,              // anything else with a duration (counted in ImportStats::unknown_category)
};
std::string_view EventKindName(EventKind kind);
inline bool IsGpuActivity(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kGpuMemcpy || k == EventKind::kGpuMemset;
}
inline bool IsLaunch(EventKind k) {
  return k == EventKind::kCudaRuntime || k == EventKind::kCudaDriver;
}

using StringId = uint32_t;

// Interns strings; ids are dense from 0. Views returned stay valid for the table's lifetime.
class StringTable {
 public:
  StringTable() { Intern(""); }              // id 0 is the empty string
  StringTable(const StringTable&) = delete;  // views into strings_ must stay valid
  StringTable& operator=(const StringTable&) = delete;
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;

  StringId Intern(std::string_view s);
  std::string_view Get(StringId id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }

 private:
  std::deque<std::string> strings_;  // deque: elements never move
  std::unordered_map<std::string_view, StringId> index_;
};

// Every time and duration in the model lies within +-kMaxTraceTimeNs (2^62 - 1 ns, 146 years):
// an event's start, its duration and its end (importers count a ts or dur beyond it, or an end
// beyond it, as malformed), an epoch offset, and every time in a node summary. So a time plus a
// duration, and the difference of two times, never overflow int64; sums of many of them, and
// times moved by another rank's clock offset, still can (the cross-rank analysis saturates).
inline constexpr int64_t kMaxTraceTimeNs = (int64_t{1} << 62) - 1;
inline constexpr bool IsTraceTime(int64_t ns) {
  return ns >= -kMaxTraceTimeNs && ns <= kMaxTraceTimeNs;
}

// One complete ('X') event.
struct Op {
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = -1;  // args.correlation (links a launch to its GPU activity); -1 if none
  // args.stream for GPU activity, as written (CUDA's 4294967295 is not -1); -1 if absent.
  int64_t stream = -1;
  StringId name = 0;
  int32_t tid = 0;          // thread id (CPU) or the tid field (GPU); strings hash to a number
  int32_t collective = -1;  // index into RankTrace::collectives, -1 if none
  EventKind kind = EventKind::kOther;
  bool ts_is_float = false;  // ts was written with a fraction or exponent
  bool hta_dropped = false;  // HTA's parser drops it: no cat, or cat "Trace"

  int64_t end_ns() const { return ts_ns + dur_ns; }
};
static_assert(sizeof(Op) == 48, "Op is kept per event: keep it small");

// Collective arguments that newer PyTorch writes on record_param_comms and NCCL kernels.
struct CollectiveArgs {
  StringId collective_name = 0;  // "allreduce", ... ; 0 = "" when absent
  StringId process_group = 0;    // "Process Group Name"
  StringId process_group_desc = 0;
  StringId process_group_ranks = 0;  // "[0, 1]"
  StringId dtype = 0;
  int64_t in_nelems = -1;
  int64_t out_nelems = -1;
  int32_t group_size = -1;
  int64_t seq = -1;  // "Seq" / "seq" where present
};

struct ImportStats {
  uint64_t events = 0;           // entries of traceEvents
  uint64_t complete_events = 0;  // 'X' events kept as Ops
  uint64_t flow_events = 0;      // 's'/'f'
  uint64_t metadata_events = 0;  // 'M'
  uint64_t other_phase_events = 0;
  uint64_t unknown_category = 0;  // 'X' events whose cat titan does not know
  uint64_t negative_durations = 0;
  uint64_t missing_fields = 0;  // 'X' events without ts (dropped) or name
  // Events of any phase skipped as malformed, by the first of these fields that is: "ph" not a
  // string; "ts" or "dur" not a number of microseconds (a string, null, beyond int64 ns, ...).
  uint64_t malformed_ph = 0;
  uint64_t malformed_ts = 0;
  uint64_t malformed_dur = 0;
  uint64_t malformed() const { return malformed_ph + malformed_ts + malformed_dur; }
};

enum class TraceFormat : uint8_t { kKineto, kLegacyAutograd };
std::string_view TraceFormatName(TraceFormat format);

// The largest rank titan takes (ranks are int32 throughout).
inline constexpr int64_t kMaxRank = INT32_MAX;
// The largest world size titan takes (2^20 ranks, far past any job): a trace or summary that
// claims more (10^9) or fewer than one is not believed (issue 37).
inline constexpr int64_t kMaxWorldSize = int64_t{1} << 20;

struct RankTrace {
  std::string path;
  TraceFormat format = TraceFormat::kKineto;
  int rank = -1;
  int world_size = -1;
  std::string rank_source;  // "distributedInfo", "file name", "single file", "--rank"
  // Why distributedInfo.rank could not be used (the value, and what is wrong with it); "" when
  // it is absent or valid.
  std::string rank_problem;
  std::string backend;      // distributedInfo.backend
  std::string device_name;  // deviceProperties[0].name
  int64_t epoch_offset_ns = 0;
  bool wall_clock = false;  // timestamps are on a clock shared across ranks (Kineto)
  // True when pandas would hold the ts column as float64 (some ts fractional or missing); HTA
  // then rounds start up and end down to whole microseconds.
  bool hta_float_ts = false;
  // Whether some event (of any phase) has no ts, no dur, or a fractional dur: with
  // hta_float_ts they decide whether HTA's durations are int64 (printed "45") or float64
  // ("45.0").
  bool hta_ts_missing = false;
  bool hta_dur_missing = false;
  bool hta_dur_float = false;
  uint64_t input_bytes = 0;  // uncompressed JSON size
  int import_threads = 1;    // the reading thread and those that parsed events beside it
  // A seam cut fell inside an event: the document was read again with exact cuts.
  bool import_read_twice = false;
  // Whether ops[0] is traceEvents[0] (HTA joins "not found" correlations to event index 0).
  bool first_op_is_first_event = false;

  StringTable strings;
  std::vector<Op> ops;
  std::vector<CollectiveArgs> collectives;
  ImportStats stats;
  std::vector<std::string> warnings;

  std::string_view Name(const Op& op) const { return strings.Get(op.name); }
};

}  // namespace titan::trace
