// DumpDirectory: the bounds on the agent's automatic recorder dumps (`--dump-dir`), so that a
// flapping job cannot fill a disk (issue 15: 148 dumps, 158 MB in 15 s):
//  - a rate limit: at most one dump per `min_interval_ns` (a dump already spans 30 s before and
//    5 s after its transient, so closer ones mostly repeat it); the rest are suppressed and
//    counted by the caller;
//  - retention: after each dump, the oldest dumps are removed until at most `keep_files` remain
//    and they take at most `max_bytes` together (the newest one is always kept, whatever its
//    size). Only this agent's file names are touched: `titan-transient-*.json` and the temporary
//    files `titan-transient-*.json.tmp-*` a crash in the middle of a write leaves behind.
//
// Thread safety: not thread-safe; the agent calls Admit() under its lock and Prune() from its
// housekeeping thread, the only one that writes dumps (so no temporary file of ours is in
// flight while Prune() runs).
#pragma once

#include <cstdint>
#include <string>

#include "src/base/status.h"

namespace titan {

struct DumpDirectoryOptions {
  std::string dir;
  int64_t min_interval_ns = 30LL * 1'000'000'000;  // --dump-min-interval
  size_t keep_files = 50;                          // --dump-keep, >= 1
  uint64_t max_bytes = 1ULL << 30;                 // --dump-max-mb, >= 1 MB
};

// What Prune() removed.
struct DumpPruneResult {
  size_t files = 0;
  uint64_t bytes = 0;
};

class DumpDirectory {
 public:
  explicit DumpDirectory(DumpDirectoryOptions options) : options_(std::move(options)) {}

  // OK when `dir` is a directory this process can create files in (checked by creating and
  // removing a probe file, so a read-only mount, missing permission or a full disk are found).
  // INVALID_ARGUMENT otherwise, naming the directory, the cause and what to do.
  static Status CheckWritable(const std::string& dir);

  // Whether a dump may be written at `now_ns` (a monotonic clock); true at most once per
  // min_interval_ns. The first call is always admitted.
  bool Admit(int64_t now_ns);

  // Applies retention (see the header comment). Errors name the directory that could not be
  // listed or the first dump that could not be removed; the other old dumps are still removed
  // (one stuck file must not stop retention for good) and reported in *removed.
  Status Prune(DumpPruneResult* removed) const;

  // File name of the dump of transient `id` whose detection started at `start_ns` (wall clock).
  std::string PathFor(uint64_t id, int64_t start_ns) const;

  const DumpDirectoryOptions& options() const { return options_; }

 private:
  const DumpDirectoryOptions options_;
  bool admitted_any_ = false;
  int64_t last_admitted_ns_ = 0;
};

}  // namespace titan
