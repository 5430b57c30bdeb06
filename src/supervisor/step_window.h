// Step times per rank for titan run's event log, summarised per window: every kWindowNs (and
// when a generation ends), one "steps" event with, per rank, the steps it finished in the window
// and their shortest, median and longest duration. The longest is kept so a single slow step (a
// transient) survives the summary; the log grows with run time, not with steps or their rate.
//
// Thread safety: not thread-safe; the supervisor's loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

namespace titan {

class StepWindow {
 public:
  static constexpr int64_t kWindowNs = 5'000'000'000;

  // A step of `rank` ended after `duration_ns` (from its step-begin event).
  void Add(int rank, int64_t step, int64_t duration_ns, int64_t now_ns);
  // The rank marked the end of its local compute (mark "compute") `compute_ns` into a step: the
  // window also reports the ranks' compute ("compute_p50_ms", "compute_max_ms"), which tells a
  // straggler apart where the all-reduce makes every rank's step equally long.
  void AddCompute(int rank, int64_t compute_ns, int64_t now_ns);
  // True when a window has been open for kWindowNs.
  bool Due(int64_t now_ns) const { return opened_ns_ >= 0 && now_ns - opened_ns_ >= kWindowNs; }
  bool empty() const { return ranks_.empty(); }
  // The "steps" event's fields ({"window_s":..,"ranks":[{"rank","first_step","last_step","count",
  // "min_ms","p50_ms","max_ms"[,"compute_p50_ms","compute_max_ms"]}]}), and a new empty window.
  // Precondition: !empty().
  nlohmann::json Take(int64_t now_ns);

 private:
  struct Rank {
    int64_t first_step = -1, last_step = -1;
    std::vector<int64_t> durations_ns;
    std::vector<int64_t> compute_ns;
  };
  std::map<int, Rank> ranks_;
  int64_t opened_ns_ = -1;
};

}  // namespace titan
