// LineRule: one kind of log line titan diagnose recognises, and what it means.
//
// A rule's pattern is written in the common subset of POSIX ERE, RE2 and Hyperscan (no \d, no
// (?:), no lookaround, no backreferences), so that one list serves three engines: Hyperscan
// finds the candidate lines of a whole buffer in one pass (line_matcher.h), RE2 confirms a
// candidate and extracts its captures, and `titan diagnose --patterns` prints the list for
// `grep -E -f` (the benchmark's baseline). Rules are tried in table order; the first one that
// confirms a line (and whose refiner accepts it) gives the line's finding, so the specific rules
// come before the general ones. Markers and context rules give no finding: they name the file's
// kind, a host, or a mapping, and every one that matches applies.
//
// Thread safety: rules are immutable tables.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/diagnose/types.h"

namespace titan::diagnose {

// Which source a line comes from; the file's kind is the family of most of its lines.
enum class Family : uint8_t { kKernel, kWorker, kNccl, kSlurm, kKubernetes, kShell };
inline constexpr int kFamilyCount = 6;
std::string_view FamilyKind(Family f);  // "kernel_log", "worker_output", ...

enum class RuleRole : uint8_t {
  kFinding,   // the line says something about a failure
  kMarker,    // the line only tells the file's family
  kHost,      // capture 1 is the host the file was taken on (a shell prompt "root@node1:~#")
  kRankGpu,   // NCCL's init line: capture 1 rank, capture 2 busId (host from the prefix)
  kChain,     // "During handling of the above exception": the next exception is a symptom
  kFileRank,  // titan run's rank-log header: capture 1 the file's rank, capture 2 its pid; its
              // time starts the file's clock
};

// The previous lines of the file (most recent first), as far as the reader kept them.
class Lookback {
 public:
  virtual ~Lookback() = default;
  // Line `back` before the current one (1 = the previous line); empty past what is kept.
  virtual std::string_view Line(int back) const = 0;
};

struct RuleMatch {
  std::string_view line;
  std::span<const std::string_view> groups;  // captures 1..N (empty when a group did not take part)
  const Lookback& before;
};

// Refines the finding the table row prefilled (class, action, tier, blame, confidence, detail)
// from the captures; returns false when the line is not this rule's after all (the next rule is
// tried).
using Refiner = bool (*)(const RuleMatch& m, Finding* f);

// The usual blames: which entities of a line are culprits.
inline constexpr Blame kBlameRank{.rank = true};
inline constexpr Blame kBlameNode{.node = true};
inline constexpr Blame kBlameGpu{.gpu = true};
inline constexpr Blame kBlameGpuNode{.node = true, .gpu = true};
inline constexpr Blame kBlameRankNode{.rank = true, .node = true};

struct LineRule {
  std::string_view id;
  Family family;
  RuleRole role;
  std::string_view pattern;
  Tier tier = Tier::kSymptom;
  FaultClass fault = FaultClass::kUnknown;
  Action action = Action::kNone;
  double confidence = 0.5;
  Blame blame;
  std::string_view detail;  // what the line means and what to do
  Refiner refine = nullptr;
};

// Each family's rules, in the order they are tried.
std::span<const LineRule> KernelRules();
std::span<const LineRule> TorchRules();
std::span<const LineRule> NcclRules();
std::span<const LineRule> ClusterRules();  // Slurm and Kubernetes
std::span<const LineRule> ContextRules();  // markers, hosts, rank-GPU mappings (tried first)

// The one list the matcher compiles: context rules, then kernel, NCCL, cluster, torch rules
// (the worker rules last: their generic Python-exception rule must not take a line a more
// specific rule reads).
const std::vector<const LineRule*>& AllLineRules();

// Shared helpers for refiners.
// Sets what a refiner decided a line means.
inline void Decide(Finding* f, FaultClass fault, Action action, Tier tier, double confidence,
                   std::string detail) {
  f->fault = fault;
  f->action = action;
  f->tier = tier;
  f->confidence = confidence;
  f->detail = std::move(detail);
}
// "host:pid:tid [cudaDev]" at the start of an NCCL line; false if absent.
bool ParseNcclPrefix(std::string_view line, std::string_view* host, int64_t* pid);
// The global rank a torchrun/torch line names: "[rank3]:" or "[Rank 3]" or "[PG 0 Rank 3]";
// -1 if none.
int64_t RankOfLine(std::string_view line);
// A decimal integer capture; `fallback` if empty or not a number.
int64_t CaptureInt(std::string_view text, int64_t fallback = -1);

}  // namespace titan::diagnose
