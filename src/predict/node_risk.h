// Acting on risk: what `titan run` reads from `titan predict risk --json` (its "nodes": each
// node's probability of a failure within the horizon) and the arithmetic it decides with.
//   - Spares: the lowest-risk nodes are chosen first (LowestRisk).
//   - Checkpoint interval: the job's MTBF from its nodes' hazards (a node's constant hazard
//     over the horizon is -ln(1 - p) / h; the job fails when any node does, so hazards add),
//     then Young's sqrt(2 delta M) and Daly's higher-order interval (src/sim/formulas.h).
//   - Drain: a node whose risk crosses a threshold leaves before it fails when the work its
//     failure is expected to cost the job, p x GPUs x (interval / 2 + restart), exceeds what
//     moving it costs now, GPUs x move cost (one planned restart onto a spare).
// Thread safety: a read table is immutable; functions are pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::predict {

class NodeRiskTable {
 public:
  // Reads `titan predict risk --json` output (needs "horizon_days" and "nodes"). Errors name
  // the file and what is missing.
  static Result<NodeRiskTable> Read(const std::string& path);
  static Result<NodeRiskTable> FromJson(const nlohmann::json& risk, const std::string& origin);

  double horizon_seconds() const { return horizon_seconds_; }
  bool Has(const std::string& node) const { return p_.count(node) > 0; }
  // A node's P(failure within the horizon); nodes the table does not name get its median.
  double P(const std::string& node) const;
  // Failures per second: -ln(1 - p) / horizon.
  double Hazard(const std::string& node) const;

 private:
  double horizon_seconds_ = 0;
  double median_ = 0;
  std::map<std::string, double> p_;
};

// The job's mean time between failures when it runs on `nodes`.
double JobMtbfSeconds(const NodeRiskTable& table, const std::vector<std::string>& nodes);

struct IntervalAdvice {
  double mtbf_seconds = 0, checkpoint_cost_seconds = 0, young_seconds = 0, daly_seconds = 0;
  nlohmann::json ToJson() const;  // with the arithmetic as text
};
IntervalAdvice AdviseCheckpointInterval(double mtbf_seconds, double checkpoint_cost_seconds);

struct DrainAdvice {
  bool drain = false;
  double p = 0, threshold = 0, gpus = 0, interval_seconds = 0, restart_seconds = 0,
         move_cost_seconds = 0, expected_lost_gpu_hours = 0, move_cost_gpu_hours = 0;
  nlohmann::json ToJson() const;  // with the arithmetic as text
};
DrainAdvice AdviseDrain(double p, double threshold, double gpus, double interval_seconds,
                        double restart_seconds, double move_cost_seconds);

// The `count` members to take from `candidates`: lowest risk first (ties by id), returned in
// the candidates' order.
std::vector<std::string> LowestRisk(const NodeRiskTable& table,
                                    const std::vector<std::string>& candidates, size_t count);

}  // namespace titan::predict
