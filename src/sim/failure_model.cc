#include "src/sim/failure_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace titan::sim {

std::vector<TableEntry> Llama3Table() {
  return {
      {"faulty GPU", 148, true},
      {"GPU HBM3 memory", 72, true},
      {"software bug", 54, false},
      {"network switch/cable", 35, true},
      {"host maintenance", 32, true},
      {"GPU SRAM memory", 19, true},
      {"GPU system processor", 17, true},
      {"NIC", 7, true},
      {"NCCL watchdog timeout", 7, false},
      {"silent data corruption", 6, true},
      {"GPU thermal interface and sensor", 6, true},
      {"SSD", 3, true},
      {"power supply", 3, true},
      {"server chassis", 2, true},
      {"IO expansion board", 2, true},
      {"dependency", 2, false},
      {"CPU", 2, true},
      {"system memory", 2, true},
  };
}

std::string TableNames() { return "llama3, meta-rsc1, meta-rsc2"; }

Result<std::vector<FailureCause>> TableCauses(std::string_view table, double scale,
                                              Distribution distribution, double weibull_shape) {
  std::vector<FailureCause> causes;
  auto add = [&](std::string name, double per_node_day, bool needs_repair) {
    FailureCause cause;
    cause.name = std::move(name);
    cause.per_node_second = scale * per_node_day / kSecondsPerDay;
    cause.distribution = distribution;
    cause.weibull_shape = weibull_shape;
    cause.needs_repair = needs_repair;
    causes.push_back(std::move(cause));
  };
  if (table == "llama3") {
    for (const TableEntry& entry : Llama3Table()) {
      add(entry.cause, entry.count / (kLlama3Nodes * kLlama3Days), entry.needs_repair);
    }
  } else if (table == "meta-rsc1") {
    add("node failure (RSC-1)", 6.50 / 1000, true);
  } else if (table == "meta-rsc2") {
    add("node failure (RSC-2)", 2.34 / 1000, true);
  } else {
    return NotFoundError(
        fmt::format("unknown failure table '{}' (tables: {})", table, TableNames()));
  }
  return causes;
}

double NodeFailureRate(const std::vector<FailureCause>& causes) {
  double rate = 0;
  for (const FailureCause& cause : causes) rate += cause.per_node_second;
  return rate;
}

double JobMtbfSeconds(const std::vector<FailureCause>& causes, int64_t nodes) {
  return 1.0 / (NodeFailureRate(causes) * static_cast<double>(nodes));
}

double WeibullScaleSeconds(double per_node_second, double shape) {
  return 1.0 / (per_node_second * std::tgamma(1.0 + 1.0 / shape));
}

FailureClocks::FailureClocks(const std::vector<FailureCause>& causes) {
  for (size_t i = 0; i < causes.size(); ++i) {
    const FailureCause& cause = causes[i];
    if (cause.distribution == Distribution::kExponential) {
      exponential_rate_ += cause.per_node_second;
      exponential_cumulative_.push_back(exponential_rate_);
      exponential_cause_.push_back(static_cast<int>(i));
    } else {
      clock_cause_.push_back(static_cast<int>(i));
      shape_.push_back(cause.weibull_shape);
      scale_.push_back(WeibullScaleSeconds(cause.per_node_second, cause.weibull_shape));
      age_.push_back(cause.initial_age_seconds);
    }
  }
}

double FailureClocks::Draw(int clock, Rng& rng) const {
  if (clock == 0) {
    if (exponential_rate_ <= 0) return std::numeric_limits<double>::infinity();
    return rng.Exponential(exponential_rate_);
  }
  return rng.Weibull(shape_[clock - 1], scale_[clock - 1]);
}

double FailureClocks::DrawInitial(int clock, Rng& rng) const {
  if (clock == 0 || age_[clock - 1] <= 0) return Draw(clock, rng);
  // P(T > a + x | T > a) = exp((a/s)^k - ((a + x)/s)^k): invert for x.
  const double k = shape_[clock - 1], s = scale_[clock - 1], a = age_[clock - 1];
  return s * std::pow(std::pow(a / s, k) - std::log(rng.UniformOpenZero()), 1.0 / k) - a;
}

int FailureClocks::PickCause(int clock, Rng& rng) const {
  if (clock != 0) return clock_cause_[clock - 1];
  if (exponential_cause_.size() == 1) return exponential_cause_[0];
  const double target = (1.0 - rng.UniformOpenZero()) * exponential_rate_;  // [0, rate)
  const auto it =
      std::upper_bound(exponential_cumulative_.begin(), exponential_cumulative_.end(), target);
  const size_t index =
      std::min<size_t>(it - exponential_cumulative_.begin(), exponential_cause_.size() - 1);
  return exponential_cause_[index];
}

}  // namespace titan::sim
