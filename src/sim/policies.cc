#include "src/sim/policies.h"

#include <algorithm>
#include <cmath>

namespace titan::sim {

double CheckpointBlockingSeconds(const CheckpointSpec& spec, int64_t k) {
  switch (spec.mode) {
    case CheckpointMode::kSync:
      return spec.write_seconds;
    case CheckpointMode::kAsync:
      return spec.blocking_seconds;
    case CheckpointMode::kInMemory:
      return spec.memory_seconds;
    case CheckpointMode::kIncremental:
      return k % spec.full_every == 0 ? spec.write_seconds
                                      : spec.incremental_fraction * spec.write_seconds;
  }
  return spec.write_seconds;
}

double MeanCheckpointBlockingSeconds(const CheckpointSpec& spec) {
  if (spec.mode != CheckpointMode::kIncremental) return CheckpointBlockingSeconds(spec, 0);
  const double k = static_cast<double>(spec.full_every);
  return spec.write_seconds * (1.0 + (k - 1.0) * spec.incremental_fraction) / k;
}

double PersistDelaySeconds(const CheckpointSpec& spec, int64_t k) {
  switch (spec.mode) {
    case CheckpointMode::kSync:
    case CheckpointMode::kIncremental:
      return 0;
    case CheckpointMode::kAsync:
      return spec.write_seconds;
    case CheckpointMode::kInMemory:
      return (k + 1) % spec.persist_every == 0 ? spec.write_seconds : -1;
  }
  return 0;
}

double RecoverySeconds(const RecoverySpec& recovery, const CheckpointSpec& checkpoint) {
  return recovery.detection_seconds + recovery.restart_seconds + checkpoint.load_seconds;
}

std::vector<double> IntervalCandidates(double center, double minimum, int count, double lo_factor,
                                       double hi_factor) {
  std::vector<double> candidates;
  const double lo = std::log(lo_factor * center), hi = std::log(hi_factor * center);
  for (int i = 0; i < count; ++i) {
    const double value = std::exp(lo + (hi - lo) * i / std::max(1, count - 1));
    if (value > minimum) candidates.push_back(value);
  }
  if (candidates.empty()) candidates.push_back(std::max(center, minimum * 1.5));
  return candidates;
}

}  // namespace titan::sim
