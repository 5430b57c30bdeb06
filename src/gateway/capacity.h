// Capacity: whether the replicas other than one could carry the offered load. The gateway asks
// before it ejects a replica that is only slow or stalled: when its peers cannot take its share,
// an ejection turns one slow replica into a queue for everyone (a 3 s stall became 14 s of
// degraded service that way), so the replica stays in rotation with a lower routing weight.
// A replica that fails (resets, 5xx, failed health checks) is taken out regardless: it has no
// capacity and would swallow traffic.
//
//   offered load     requests per second arriving at the pool, admitted or shed;
//   a replica's rate its seats / its mean seat time (Little's law, from the answers it finished
//                    recently); one without numbers yet takes the median of its peers';
//   verdict          the others carry the load when offered <= utilization x the sum of their
//                    rates (only replicas serving now count: ready, not stalled or ejected).
// Seat times are measured at the load the replicas had, so the rates are what they sustain near
// it; a replica that slows with a fuller batch carries less than its rate says, which the
// utilization (0.9 by default) leaves room for.
//
// Free of I/O; thread safety: none.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace titan::gateway {

struct ReplicaCapacity {
  int seats = 0;            // its in-flight limit
  double seat_seconds = 0;  // mean seat time of its recent answers; <= 0: no numbers yet
  bool serving = false;     // routable now
};

struct CapacityCheck {
  bool others_can_carry = false;
  double offered_rps = 0;
  double others_rps = 0;  // the others' summed rate, before the utilization
  size_t others = 0;      // how many others serve
  double utilization = 0;
  // "2 others carry 24.6 req/s at 90% for 30.1 req/s offered"
  std::string Explain() const;
};

CapacityCheck OthersCanCarry(const std::vector<ReplicaCapacity>& replicas, size_t without,
                             double offered_rps, double utilization);

}  // namespace titan::gateway
