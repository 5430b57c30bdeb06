// RunOutputs: what titan run reports besides its decisions: the step-time window ("steps"
// events), the Prometheus metrics (--metrics-file, --metrics-port; rewritten once a second), the
// checkpoint prefetch of each (re)start ("prefetch" events), and at the end the goodput ledger
// (--ledger-json, a "ledger" event) and the summary on stderr.
//
// Ownership: holds references to the run's options, event log and ledger, which the Supervisor
// owns and which outlive it; owns the metrics endpoint, the step window and a prefetch in flight.
// Times are CLOCK_MONOTONIC ns. Thread safety: not thread-safe; the supervisor loop owns it.
#pragma once

#include <cstdint>
#include <memory>

#include "src/base/status.h"
#include "src/checkpoint/prefetch.h"
#include "src/supervisor/ledger.h"
#include "src/supervisor/metrics_endpoint.h"
#include "src/supervisor/rank_logs.h"
#include "src/supervisor/rendezvous.h"
#include "src/supervisor/run_log.h"
#include "src/supervisor/step_window.h"
#include "src/supervisor/supervisor.h"

namespace titan::supervisor {

class RunOutputs {
 public:
  RunOutputs(const RunOptions& options, int64_t start_ns, RunLog& log, GoodputLedger& ledger)
      : o_(options), start_ns_(start_ns), log_(log), ledger_(ledger) {}
  ~RunOutputs();
  RunOutputs(const RunOutputs&) = delete;
  RunOutputs& operator=(const RunOutputs&) = delete;

  // Serves /metrics when options.metrics_port is set.
  Status StartEndpoint();

  // Where the ranks' step durations go (RankEvents adds, FlushSteps takes).
  StepWindow& step_window() { return step_window_; }
  // Writes the step window's "steps" event when it is due (or now, when `force`).
  void FlushSteps(int64_t now, int64_t generation, bool force);
  // FlushSteps, then at most once a second (every call when `force`) the metrics: the ledger's,
  // the generation and world size of `a`, and `events_dropped`.
  void PublishMetrics(int64_t now, const Assignment& a, uint64_t events_dropped,
                      bool force = false);

  // Before the workers of `a` exist, on the node of group rank 0 with a mirror and a local
  // checkpoint directory: starts copying the mirror's newest checkpoint there (one at a time;
  // a restart during one keeps it).
  void StartPrefetch(const Assignment& a);
  // Once the prefetch ended: one "prefetch" event with what it did (see docs/run.md).
  void ReportPrefetch();

  // At the end of the run: reports the prefetch, cancelling one in flight.
  void EndPrefetch();
  // The last failure's diagnosis (IncidentJson, or null) and decision, for the verdict: in the
  // ledger ("diagnosis", "verdict") and the summary.
  void SetVerdict(const nlohmann::json& diagnosis, const std::string& decision);
  // Where the ranks' output went and what its bounds dropped, for the ledger and the summary.
  void SetRankLogStats(const RankLogs::Stats& stats, const std::string& dir);
  // The end of the run (exit code `code`), once the workers are gone: closes the ledger,
  // publishes the last metrics, writes the ledger (event and --ledger-json) and, unless quiet,
  // the summary on stderr. Returns the exit code: `code`, or kExitRecordsNotWritten when the job
  // succeeded but titan run's own records (the event log, the ledger) could not be written
  // whole; the summary then says which and why instead of naming a file that is not there.
  int Finish(int code, int64_t now, const Assignment& a, uint64_t events_dropped,
             int restart_count);

 private:
  void PrintSummary(int code, int64_t now, int restart_count);

  const RunOptions& o_;
  const int64_t start_ns_;
  RunLog& log_;
  GoodputLedger& ledger_;
  StepWindow step_window_;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;         // --metrics-port
  std::unique_ptr<checkpoint::CheckpointPrefetch> prefetch_;  // in flight or not yet reported
  int64_t next_metrics_ns_ = 0;
  bool metrics_file_ok_ = true;  // the last --metrics-file write succeeded
  Status records_error_;         // set by Finish
  nlohmann::json diagnosis_;
  std::string decision_;
  nlohmann::json rank_logs_;
};

}  // namespace titan::supervisor
