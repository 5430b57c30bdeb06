#include "src/gateway/capacity.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace titan::gateway {

std::string CapacityCheck::Explain() const {
  return fmt::format("{} other{} carr{} {:.1f} req/s at {:.0f}% for {:.1f} req/s offered", others,
                     others == 1 ? "" : "s", others == 1 ? "ies" : "y", others_rps * utilization,
                     utilization * 100, offered_rps);
}

CapacityCheck OthersCanCarry(const std::vector<ReplicaCapacity>& replicas, size_t without,
                             double offered_rps, double utilization) {
  std::vector<double> known;
  for (const ReplicaCapacity& r : replicas) {
    if (r.seat_seconds > 0) known.push_back(r.seat_seconds);
  }
  double median = 0;
  if (!known.empty()) {
    std::sort(known.begin(), known.end());
    median = known[known.size() / 2];
  }
  CapacityCheck check;
  check.offered_rps = offered_rps;
  check.utilization = utilization;
  for (size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaCapacity& r = replicas[i];
    if (i == without || !r.serving || r.seats <= 0) continue;
    ++check.others;
    const double seat_seconds = r.seat_seconds > 0 ? r.seat_seconds : median;
    // No numbers anywhere yet: nothing says the others cannot carry it.
    if (seat_seconds <= 0) {
      check.others_rps = std::numeric_limits<double>::infinity();
      continue;
    }
    check.others_rps += r.seats / seat_seconds;
  }
  check.others_can_carry = check.others > 0 && offered_rps <= utilization * check.others_rps;
  return check;
}

}  // namespace titan::gateway
