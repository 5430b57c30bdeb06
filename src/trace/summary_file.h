// The node summary file of a split trace analysis (`titan trace summarize` writes one per node,
// `titan trace analyze` merges them): everything the cross-rank analysis and every output of
// `titan trace analyze` need from the ranks analysed on one node (their RankSummary: per-step
// breakdowns, idle gaps, launch delays, verdicts, each collective call's arrival and end; their
// HTA-compatible results when summarised with --hta-compat; the files that failed), without the
// raw events.
//
// Format: one compact JSON object, `kind` first so that a reader can tell a summary from a trace
// by its first bytes:
//   {"kind":"titan-trace-summary","version":1,"job":"...","host":"...","seconds":0.4,
//    "options":{...},"errors":[...],"ranks":[...],"hta":[...]}
// Records are arrays of fixed position (documented in summary_file.cc next to the code that
// writes them); a collective call is [group, seq, start delta, duration, step, elements], its
// start relative to the previous call's start (modulo 2^64, so every int64 survives exactly).
// Size: about 0.7 KB per rank, plus ~90 bytes per step, ~35 bytes per collective call and ~100
// bytes plus the op names per kept idle gap (docs/trace.md has measured sizes). Every number
// round-trips exactly: integers as integers, doubles in shortest round-trip form, NaN as null,
// infinities as "inf".
//
// Thread safety: pure functions; the file functions touch only the named path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/trace/analyses/hta_compat.h"
#include "src/trace/analyses/rank_summary.h"

namespace titan::trace {

inline constexpr std::string_view kSummaryKind = "titan-trace-summary";
inline constexpr int kSummaryVersion = 1;
// A reader refuses larger files (about 30 million collective calls) instead of exhausting memory.
inline constexpr size_t kMaxSummaryBytes = size_t{1} << 30;

// The options that shape per-rank results; a merge requires every summary to share them.
struct SummaryFileOptions {
  int top_gaps = 5;
  bool hta_compat = false;
  HtaOptions hta;
  bool operator==(const SummaryFileOptions& o) const {
    return top_gaps == o.top_gaps && hta_compat == o.hta_compat &&
           hta.consecutive_kernel_delay_us == o.hta.consecutive_kernel_delay_us &&
           hta.num_kernels == o.hta.num_kernels && hta.duration_ratio == o.hta.duration_ratio;
  }
};

struct NodeSummary {
  int version = kSummaryVersion;
  std::string job;     // --job or $SLURM_JOB_ID; "" when neither was set
  std::string host;    // where it was summarised (for error messages)
  double seconds = 0;  // the node's analysis time
  SummaryFileOptions options;
  std::vector<std::string> errors;  // one line per trace file that could not be used
  std::vector<RankSummary> ranks;   // by rank
  std::vector<HtaRankResult> hta;   // by rank; empty without options.hta_compat
};

// The file's bytes (compact JSON, no trailing newline).
std::string EncodeSummary(const NodeSummary& summary);

// Parses a summary. INVALID_ARGUMENT naming `origin` and the field ("ranks[2].steps[0][3]") for
// anything that is not a summary titan wrote: wrong kind, JSON nested deeper than
// kMaxJsonDepth, malformed JSON, a missing or mistyped field, a rank twice in the file;
// FAILED_PRECONDITION for another `version`, saying to use the same titan for both halves.
Result<NodeSummary> DecodeSummary(std::string_view text, std::string_view origin);

// Writes EncodeSummary(summary) and a newline to `path` atomically (a temporary file renamed
// into place; "-" is standard output); returns the bytes written.
Result<uint64_t> WriteSummaryFile(const std::string& path, const NodeSummary& summary);
// Reads and decodes `path` (at most kMaxSummaryBytes); errors name the path.
Result<NodeSummary> ReadSummaryFile(const std::string& path);

// Whether `path` starts as a summary does (optional whitespace, '{', "kind" : the summary kind).
// False for traces (Kineto, legacy, gzip) and for files that cannot be read or are not regular
// files (never blocks on a FIFO).
bool LooksLikeSummaryFile(const std::string& path);

}  // namespace titan::trace
