// LineMatcher: finds the lines of a buffer that line rules (rules/line_rule.h) may match, in one
// Hyperscan pass over the whole buffer, and confirms a candidate with RE2, which also yields the
// captures. Both engines run in time linear in the input (no backtracking): a hostile 100 MB
// line costs a scan, never an exponential match.
//
// Thread safety: a LineMatcher is immutable after Create() and shared; each thread scans with
// its own Scratch.
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/diagnose/rules/line_rule.h"

namespace titan::diagnose {

inline constexpr size_t kMaxLineRules = 192;

// One line of the scanned buffer that some rules' patterns matched.
struct CandidateLine {
  size_t begin = 0;  // offset of the line's first byte in the buffer
  size_t end = 0;    // offset of its '\n' (or the buffer's end)
  std::bitset<kMaxLineRules> rules;
};

class LineMatcher {
 public:
  // Compiles AllLineRules(). Fails with INTERNAL naming the rule whose pattern does not compile.
  static Result<std::unique_ptr<LineMatcher>> Create();
  // The process-wide matcher, compiled on first use (thread-safe); aborts if the built-in rules
  // do not compile (a bug caught by the tests).
  static const LineMatcher& Default();
  ~LineMatcher();
  LineMatcher(const LineMatcher&) = delete;
  LineMatcher& operator=(const LineMatcher&) = delete;

  // Per-thread scan memory.
  class Scratch {
   public:
    Scratch() = default;
    Scratch(Scratch&& other) noexcept;
    Scratch& operator=(Scratch&& other) noexcept;
    ~Scratch();

   private:
    friend class LineMatcher;
    void* scratch_ = nullptr;  // hs_scratch_t
  };
  Result<Scratch> NewScratch() const;

  // Appends to *out the lines of `text` that some finding or context rule may match, in order of
  // their begin offsets. Marker rules (RuleRole::kMarker) are not scanned here: see
  // CountMarkers. `text` should end at a line boundary (a line cut by the buffer's end is
  // scanned as far as it goes).
  Status Scan(std::string_view text, Scratch& scratch, std::vector<CandidateLine>* out) const;

  // Adds to (*marker_lines)[i] the number of lines of `text` marker rule i matched (resized to
  // size() when shorter). A separate pass from Scan, from Hyperscan's match alone: markers
  // capture nothing for RE2 to confirm, they only name a file's kind, and on a rank's log they
  // match nearly every line, so a reader can count them over a sample instead of every byte.
  Status CountMarkers(std::string_view text, Scratch& scratch,
                      std::vector<int64_t>* marker_lines) const;

  // Whether rule `index` matches `line` (RE2, unanchored); fills `groups` with its captures.
  bool Confirm(size_t index, std::string_view line, std::vector<std::string_view>* groups) const;

  size_t size() const { return rules_.size(); }
  const LineRule& rule(size_t index) const { return *rules_[index]; }
  // The patterns as Hyperscan compiles them (trailing ".*" dropped: it never changes whether a
  // line matches), one per line: what `grep -E -f` reads in the benchmark.
  std::string PatternList() const;

 private:
  LineMatcher() = default;
  // Compiles the marker rules (markers) or the others into a Hyperscan database (*db).
  Status CompileDatabase(bool markers, void** db) const;
  struct Compiled;
  std::vector<const LineRule*> rules_;
  std::vector<std::string> prefilter_patterns_;
  std::bitset<kMaxLineRules> markers_;  // the rules with RuleRole::kMarker
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace titan::diagnose
