#include "src/predict/node_risk.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "src/base/json_depth.h"
#include "src/sim/formulas.h"

namespace titan::predict {

using nlohmann::json;

Result<NodeRiskTable> NodeRiskTable::Read(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFoundError("cannot read the risk file " + path + " (--risk)");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(text, path));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return FromJson(j, path);
}

Result<NodeRiskTable> NodeRiskTable::FromJson(const json& j, const std::string& origin) {
  const std::string hint = " (write it with: titan predict risk HISTORY --at TIME --json FILE)";
  if (!j.is_object() || !j.contains("horizon_days") || !j["horizon_days"].is_number() ||
      !(j["horizon_days"].get<double>() > 0)) {
    return InvalidArgumentError(origin +
                                ": not a titan predict risk result: no positive "
                                "horizon_days" +
                                hint);
  }
  if (!j.contains("nodes") || !j["nodes"].is_array()) {
    return InvalidArgumentError(origin + ": no \"nodes\" list" + hint);
  }
  NodeRiskTable t;
  t.horizon_seconds_ = j["horizon_days"].get<double>() * 86400;
  std::vector<double> all;
  for (const json& n : j["nodes"]) {
    if (!n.is_object() || !n.contains("node_name") || !n["node_name"].is_string() ||
        !n.contains("p") || !n["p"].is_number()) {
      return InvalidArgumentError(origin + ": a node without node_name and p" + hint);
    }
    const double p = n["p"].get<double>();
    if (!(p >= 0 && p < 1)) {
      return InvalidArgumentError(fmt::format("{}: node {}: p {} is not a probability in [0, 1)",
                                              origin, n["node_name"].get<std::string>(), p));
    }
    t.p_[n["node_name"].get<std::string>()] = p;
    all.push_back(p);
  }
  if (!all.empty()) {
    std::nth_element(all.begin(), all.begin() + all.size() / 2, all.end());
    t.median_ = all[all.size() / 2];
  }
  return t;
}

double NodeRiskTable::P(const std::string& node) const {
  auto it = p_.find(node);
  return it == p_.end() ? median_ : it->second;
}

double NodeRiskTable::Hazard(const std::string& node) const {
  return -std::log1p(-P(node)) / horizon_seconds_;
}

double JobMtbfSeconds(const NodeRiskTable& table, const std::vector<std::string>& nodes) {
  double rate = 0;
  for (const std::string& n : nodes) rate += table.Hazard(n);
  return rate > 0 ? 1 / rate : INFINITY;
}

IntervalAdvice AdviseCheckpointInterval(double mtbf_seconds, double cost_seconds) {
  IntervalAdvice a;
  a.mtbf_seconds = mtbf_seconds;
  a.checkpoint_cost_seconds = cost_seconds;
  a.young_seconds = sim::YoungIntervalSeconds(cost_seconds, mtbf_seconds);
  a.daly_seconds = sim::DalyIntervalSeconds(cost_seconds, mtbf_seconds);
  return a;
}

json IntervalAdvice::ToJson() const {
  return {{"mtbf_hours", mtbf_seconds / 3600},
          {"checkpoint_cost_s", checkpoint_cost_seconds},
          {"young_s", young_seconds},
          {"daly_s", daly_seconds},
          {"interval_s", daly_seconds},
          {"arithmetic",
           fmt::format("MTBF {:.1f} h from the nodes' risks; Young sqrt(2 x {:.0f} s x {:.0f} s) "
                       "= {:.0f} s; Daly {:.0f} s (recommended)",
                       mtbf_seconds / 3600, checkpoint_cost_seconds, mtbf_seconds, young_seconds,
                       daly_seconds)}};
}

DrainAdvice AdviseDrain(double p, double threshold, double gpus, double interval_seconds,
                        double restart_seconds, double move_cost_seconds) {
  DrainAdvice d;
  d.p = p;
  d.threshold = threshold;
  d.gpus = gpus;
  d.interval_seconds = interval_seconds;
  d.restart_seconds = restart_seconds;
  d.move_cost_seconds = move_cost_seconds;
  d.expected_lost_gpu_hours = p * gpus * (interval_seconds / 2 + restart_seconds) / 3600;
  d.move_cost_gpu_hours = gpus * move_cost_seconds / 3600;
  d.drain = threshold > 0 && p >= threshold && d.expected_lost_gpu_hours > d.move_cost_gpu_hours;
  return d;
}

json DrainAdvice::ToJson() const {
  return {
      {"drain", drain},
      {"p", p},
      {"threshold", threshold},
      {"gpus", gpus},
      {"expected_lost_gpu_hours", expected_lost_gpu_hours},
      {"move_cost_gpu_hours", move_cost_gpu_hours},
      {"arithmetic",
       fmt::format("expected loss p x GPUs x (interval/2 + restart) = {:.3f} x {:.0f} x "
                   "({:.0f} s / 2 + {:.0f} s) = {:.2f} GPU-h {} move cost GPUs x {:.0f} s = "
                   "{:.2f} GPU-h; p {} threshold {:.3f}",
                   p, gpus, interval_seconds, restart_seconds, expected_lost_gpu_hours,
                   expected_lost_gpu_hours > move_cost_gpu_hours ? ">" : "<=", move_cost_seconds,
                   move_cost_gpu_hours, p >= threshold ? ">=" : "<", threshold)}};
}

std::vector<std::string> LowestRisk(const NodeRiskTable& table,
                                    const std::vector<std::string>& candidates, size_t count) {
  std::vector<std::string> by_risk = candidates;
  std::stable_sort(by_risk.begin(), by_risk.end(), [&](const std::string& a, const std::string& b) {
    return table.P(a) < table.P(b);
  });
  if (by_risk.size() > count) by_risk.resize(count);
  std::vector<std::string> out;
  for (const std::string& c : candidates) {
    if (std::find(by_risk.begin(), by_risk.end(), c) != by_risk.end()) out.push_back(c);
  }
  return out;
}

}  // namespace titan::predict
