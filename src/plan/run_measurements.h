// What a titan run directory measured about a job, for a training plan built on it: the step
// time, the checkpoint's stall and background write, the restart time, the world size and the
// ETTR, from `ledger.json` (--ledger-json) and `events.jsonl` (--event-log) (docs/run.md).
//
//   step time        the median over `steps` events of their per-rank median (p50_ms)
//   checkpoint       the median `blocking_ms` of `checkpoint` events; the write is the median
//                    `background_ms` of `checkpoint_committed` (async), else the stall
//   restart          the median `detect_to_exec_ms` of `restart` events plus the ledger's
//                    startup seconds per generation
//   world size, ETTR the ledger's
// Lines that are not JSON objects are skipped and counted.
// Errors: no ledger.json or events.jsonl in the directory, or no step times in the log (the
// plan needs at least those), naming the directory.
//
// Thread safety: pure functions (ReadRunDirectory reads files).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace titan::plan {

struct RunMeasurements {
  int64_t world_size = 0;
  double step_seconds = 0;
  double checkpoint_stall_seconds = 0;  // 0: no checkpoint seen
  double checkpoint_write_seconds = 0;
  bool checkpoint_async = false;
  double restart_seconds = 0;  // 0: no restart seen
  double ettr = 0;
  double wall_seconds = 0;
  int64_t restarts = 0;
  int64_t skipped_lines = 0;
};

// From the two files' contents (`source` names them in errors).
Result<RunMeasurements> ParseRunFiles(std::string_view ledger_json, std::string_view events_jsonl,
                                      const std::string& source);

Result<RunMeasurements> ReadRunDirectory(const std::string& dir);

}  // namespace titan::plan
