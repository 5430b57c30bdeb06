// Checkpoint and recovery policies: what each checkpoint costs, when it becomes durable, how
// long a recovery takes, and which interval a policy picks.
//
// Checkpoint modes (k = 0, 1, 2, ... counts checkpoints):
//  - sync: the job stalls for write_seconds; durable when the stall ends.
//  - async: the job stalls for blocking_seconds (snapshot to host memory); the write to storage
//    (write_seconds) runs in the background and the checkpoint is durable only when it ends.
//  - in_memory: the job stalls for memory_seconds (copy to peer memory, as Gemini/CheckFreq do);
//    a failure restores from memory with probability memory_survival; every persist_every-th
//    snapshot is also written to storage in the background.
//  - incremental: sync, but only every full_every-th checkpoint is full; the others write
//    incremental_fraction of it.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "src/sim/scenario.h"

namespace titan::sim {

// The stall of checkpoint k.
double CheckpointBlockingSeconds(const CheckpointSpec& spec, int64_t k);
// The average stall per checkpoint: the delta of Young's and Daly's formulas.
double MeanCheckpointBlockingSeconds(const CheckpointSpec& spec);
// Seconds after the stall of checkpoint k until it is in storage; 0 when the stall already
// made it durable, negative when checkpoint k is never written to storage (memory only).
double PersistDelaySeconds(const CheckpointSpec& spec, int64_t k);

// Detection + restart + load from storage: the R of Daly's formula.
double RecoverySeconds(const RecoverySpec& recovery, const CheckpointSpec& checkpoint);

// Interval candidates for the "searched" policy: `count` points spaced evenly in log between
// lo_factor and hi_factor times `center`, all above `minimum`.
std::vector<double> IntervalCandidates(double center, double minimum, int count,
                                       double lo_factor = 0.25, double hi_factor = 4.0);

}  // namespace titan::sim
