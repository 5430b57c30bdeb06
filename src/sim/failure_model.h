// Failure model: per-node failure processes, the built-in tables from published runs, and the
// per-node clocks the engine draws from.
//
// Tables (rates per node; 8 GPUs per node):
//  - "llama3": the 419 unexpected interruptions in 54 days on 16,384 H100 GPUs (2,048 nodes) of
//    "The Llama 3 Herd of Models" (Meta, 2024), table 5, by cause, using the counts (the printed
//    percentages do not match them). Software causes (software bug, NCCL watchdog timeout,
//    dependency) need a restart but no repair; the rest take the node away for repair.
//  - "meta-rsc1" / "meta-rsc2": 6.50 and 2.34 failures per 1,000 node-days measured on Meta's
//    research clusters RSC-1 and RSC-2 (Kokolis et al., "Revisiting Reliability in Large-Scale
//    Machine Learning Research Clusters", 2024), one aggregate hardware cause.
// Thread safety: the tables are constant; FailureClocks is immutable after construction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"
#include "src/sim/random.h"
#include "src/sim/scenario.h"

namespace titan::sim {

inline constexpr double kSecondsPerDay = 86400;
inline constexpr double kSecondsPerHour = 3600;

struct TableEntry {
  const char* cause;
  int count;
  bool needs_repair;
};
// The Llama 3 table: counts over kLlama3Days on kLlama3Nodes nodes.
inline constexpr int kLlama3Nodes = 2048;
inline constexpr double kLlama3Days = 54;
std::vector<TableEntry> Llama3Table();

// The causes of a built-in table with rates scaled by `scale` (> 0), all with `distribution`
// (`weibull_shape` used for Weibull). NOT_FOUND for an unknown table.
Result<std::vector<FailureCause>> TableCauses(std::string_view table, double scale,
                                              Distribution distribution, double weibull_shape);
std::string TableNames();

// Sum of the causes' long-run rates per node (failures per node-second).
double NodeFailureRate(const std::vector<FailureCause>& causes);
// Mean time between failures of a job on `nodes` nodes, assuming failed nodes are replaced at
// once (the rates then add up: MTBF falls as 1/nodes).
double JobMtbfSeconds(const std::vector<FailureCause>& causes, int64_t nodes);
// Weibull scale (seconds) with mean 1/rate for the given shape: 1 / (rate * Gamma(1 + 1/k)).
double WeibullScaleSeconds(double per_node_second, double shape);

// The per-node clocks of a set of causes: clock 0 is the sum of all exponential causes (one
// draw serves them all; the cause is picked in proportion to rates when it fires), clocks
// 1..n are the Weibull causes, each renewed on its own.
class FailureClocks {
 public:
  FailureClocks() = default;
  explicit FailureClocks(const std::vector<FailureCause>& causes);
  int clock_count() const { return static_cast<int>(clock_cause_.size()) + 1; }
  // Seconds from a renewal until the clock fires. Infinity for an empty exponential clock.
  double Draw(int clock, Rng& rng) const;
  // Seconds until the clock fires for a node that has already run its cause's
  // initial_age_seconds without failing (the Weibull residual life; memoryless for exponential).
  double DrawInitial(int clock, Rng& rng) const;
  // The cause index (into the vector given at construction) of a fired clock.
  int PickCause(int clock, Rng& rng) const;

 private:
  double exponential_rate_ = 0;
  std::vector<double> exponential_cumulative_;  // running sums of the exponential rates
  std::vector<int> exponential_cause_;
  std::vector<int> clock_cause_;  // Weibull clock i+1 -> cause index
  std::vector<double> shape_;
  std::vector<double> scale_;
  std::vector<double> age_;
};

}  // namespace titan::sim
