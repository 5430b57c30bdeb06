// Detection and decision policies of `titan run`, free of processes and clocks so that they are
// unit-tested with made-up timelines. All times are monotonic nanoseconds supplied by the caller.
//
// Thread safety: none of these classes is thread-safe; the supervisor loop owns them.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace titan::supervisor {

// Hang: a worker that makes no progress (step, checkpoint or heartbeat event) for longer than
//   threshold = max(k * p99(step interval), floor)
// once steps have been seen, or start-up timeout before its first step. Step intervals are
// learned from the job's own step_end events (the last `window` intervals, per rank).
struct HangOptions {
  double k = 3.0;
  int64_t floor_ns = 10LL * 1'000'000'000;
  int64_t startup_timeout_ns = 300LL * 1'000'000'000;
  int64_t checkpoint_timeout_ns = 600LL * 1'000'000'000;  // while a checkpoint is being written
  size_t window = 256;
  size_t min_intervals = 5;  // before this many intervals, the floor alone applies
};

class HangDetector {
 public:
  explicit HangDetector(HangOptions options) : options_(options) {}

  // A new generation of `ranks` workers started at `now_ns` (forgets progress, keeps intervals).
  void Reset(const std::vector<int>& ranks, int64_t now_ns);
  // Progress events. step_end also feeds the interval statistics.
  void OnStepEnd(int rank, int64_t step, int64_t now_ns);
  void OnProgress(int rank, int64_t now_ns);  // step_begin, heartbeat, checkpoint end
  void OnCheckpointBegin(int rank, int64_t now_ns);

  // The current threshold for a worker that has stepped, in ns.
  int64_t ThresholdNs() const;
  double P99IntervalNs() const;

  struct Verdict {
    int rank = -1;
    int64_t silent_ns = 0;     // how long it made no progress
    int64_t threshold_ns = 0;  // the bound it exceeded
    int64_t last_progress_ns = 0;
    bool before_first_step = false;
  };
  // The worker silent the longest beyond its bound, if any.
  std::optional<Verdict> Check(int64_t now_ns) const;

 private:
  struct RankState {
    int64_t last_progress_ns = 0;
    int64_t last_step_end_ns = -1;
    bool stepped = false;
    bool in_checkpoint = false;
  };
  HangOptions options_;
  std::map<int, RankState> ranks_;
  std::deque<int64_t> intervals_ns_;
};

// Straggler: a rank whose recent compute time (median over the last `window` steps) exceeds the
// median of its peers by `ratio` and by `k` robust deviations (1.4826 * MAD of the peers, at
// least `min_spread` of their median) and by `min_delta_ns`, in `persist` consecutive
// evaluations.
struct StragglerOptions {
  double k = 3.0;
  double ratio = 1.5;
  // And slower by at least this much: ms-scale scheduling noise is not a straggler.
  double min_delta_ns = 10e6;
  double min_spread = 0.05;
  size_t window = 10;
  int persist = 3;
};

class StragglerDetector {
 public:
  explicit StragglerDetector(StragglerOptions options) : options_(options) {}
  void Reset();
  // One sample of rank's compute time for a step.
  void Add(int rank, int64_t compute_ns);
  // Per-rank medians over the window (ranks with a full window only).
  std::map<int, double> Medians() const;

  struct Finding {
    int rank = -1;
    double median_ns = 0;
    double peers_median_ns = 0;
    double score = 0;  // (median - peers_median) / spread
    int consecutive = 0;
    bool persistent = false;
  };
  // Evaluates `medians` (this node's, possibly merged with other nodes'); updates the
  // persistence counters. Returns the ranks currently flagged.
  std::vector<Finding> Evaluate(const std::map<int, double>& medians);

 private:
  StragglerOptions options_;
  std::map<int, std::deque<int64_t>> samples_;
  std::map<int, int> consecutive_;
};

double Median(std::vector<double> values);

// Isolation: failures per slot ("node/local_rank") and per node within a sliding window; a node
// with `max_failures` failures in `window_ns` is excluded for `cooldown_ns`.
struct IsolationOptions {
  int max_failures = 2;
  int64_t window_ns = 30LL * 60 * 1'000'000'000;
  int64_t cooldown_ns = 10LL * 60 * 1'000'000'000;
};

class FailureTracker {
 public:
  explicit FailureTracker(IsolationOptions options) : options_(options) {}
  // Records a failure attributed to `node` (group-independent node id) and local slot.
  void Record(const std::string& node, int local_rank, int64_t now_ns);
  int RecentFailures(const std::string& node, int64_t now_ns) const;
  // True when the node has reached the threshold; starts its cool-down.
  bool ShouldExclude(const std::string& node, int64_t now_ns);
  bool Excluded(const std::string& node, int64_t now_ns) const;

 private:
  IsolationOptions options_;
  std::map<std::string, std::deque<int64_t>> failures_;
  std::map<std::string, int64_t> excluded_until_ns_;
};

// Restart budget with exponential backoff: the n-th restart (0-based) waits
// min(base * 2^n, max); after `max_restarts` the job fails.
struct RestartOptions {
  int max_restarts = 10;
  int64_t backoff_base_ns = 0;
  int64_t backoff_max_ns = 30LL * 1'000'000'000;
};

class RestartBudget {
 public:
  explicit RestartBudget(RestartOptions options) : options_(options) {}
  bool Exhausted() const { return used_ >= options_.max_restarts; }
  // Consumes one restart and returns the backoff to wait before it.
  int64_t Take();
  int used() const { return used_; }

 private:
  RestartOptions options_;
  int used_ = 0;
};

}  // namespace titan::supervisor
