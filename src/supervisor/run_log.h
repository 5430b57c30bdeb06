// RunLog: the event log of `titan run`, one JSON object per line:
//   {"time_ns": <wall ns>, "t": <seconds since start>, "node": "...", "type": "...", ...fields}
// Types: start, rendezvous, spawn, exit, crash, hang, stack, straggler, decision, restart,
// exclude, inject, checkpoint, checkpoint_committed, checkpoint_durable, prefetch, preempt,
// finish (see docs/run.md). Every line is flushed as it is written, so a `titan run` killed
// hard leaves a complete log up to its last decision. The most recent lines are also kept in
// memory (bounded) for the end-of-run timeline.
//
// Thread safety: not thread-safe; owned by the supervisor loop.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::supervisor {

class RunLog {
 public:
  RunLog() = default;
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  // Opens (appends to) `path`; empty: memory only.
  Status Open(const std::string& path, std::string node, int64_t start_mono_ns);
  // Writes one event. `fields` must be a JSON object (or null).
  void Write(const std::string& type, nlohmann::json fields);
  const std::deque<nlohmann::json>& recent() const { return recent_; }
  const std::string& path() const { return path_; }
  // The first failed write to the file (a full disk: lines lost from there on), else OK.
  const Status& write_error() const { return write_error_; }
  uint64_t lines_lost() const { return lines_lost_; }

 private:
  Status write_error_;
  uint64_t lines_lost_ = 0;
  FILE* file_ = nullptr;
  std::string path_;
  std::string node_;
  int64_t start_mono_ns_ = 0;
  std::deque<nlohmann::json> recent_;
};

}  // namespace titan::supervisor
