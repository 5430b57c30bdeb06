// Closed-form results the simulator is checked against and reports next to its own numbers.
// M is the job's mean time between failures (exponential failures), delta the checkpoint cost
// (the time the job stalls per checkpoint), R the time to get going again after a failure
// (detection + restart + load). All in seconds. Pure functions; thread-safe.
#pragma once

#include <cstdint>

namespace titan::sim {

// Young (1974), "A first order approximation to the optimum checkpoint interval":
// sqrt(2 * delta * M).
double YoungIntervalSeconds(double delta_seconds, double mtbf_seconds);

// Daly (2006), "A higher order estimate of the optimum checkpoint interval for restart dumps",
// eq. 37: sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3 + (delta / 2M) / 9] - delta for delta < 2M,
// else M.
double DalyIntervalSeconds(double delta_seconds, double mtbf_seconds);

// Expected wall time to finish one segment of `length` seconds when any failure loses the
// segment and costs a restart of R seconds that failures may interrupt too (Daly 2006):
// M e^(R/M) (e^(length/M) - 1).
double ExpectedSegmentSeconds(double length_seconds, double restart_seconds, double mtbf_seconds);

// Daly's complete model for `work_seconds` of compute split into segments of `interval`
// compute, each followed by a checkpoint of delta except the last one (the job ends there).
// This is exactly the simulator's model with sync checkpoints, exponential failures, spares
// always available and no stragglers.
double ExpectedWallSeconds(double work_seconds, double interval_seconds, double delta_seconds,
                           double restart_seconds, double mtbf_seconds);

// Long-run ETTR (useful compute / wall time) of the same model: interval / E[segment of
// interval + delta].
double ExpectedEttr(double interval_seconds, double delta_seconds, double restart_seconds,
                    double mtbf_seconds);

// The interval that maximises ExpectedEttr (golden-section search on a log scale). Daly's
// formula approximates this.
double OptimalIntervalSeconds(double delta_seconds, double restart_seconds, double mtbf_seconds);

}  // namespace titan::sim
