// Cross-rank analysis of PyTorch NCCL Flight Recorder dumps: for each process group, the first
// collective (by sequence number) that some ranks never issued, or issued with a different op,
// sizes or dtypes, and which ranks; else the first one every rank issued and none completed.
//
// Unlike torchfrtrace it reads every rank's dump it is given without assuming any rank healthy
// (the ranks that stopped earliest are the suspects, whichever dump is read first), reports a
// rank whose dump is missing instead of refusing the set, and does not stop after a number of
// mismatches: it reports the first divergence of each process group and counts the rest.
//
// Thread safety: pure function.
#pragma once

#include <vector>

#include "src/diagnose/sources/source.h"
#include "src/diagnose/types.h"

namespace titan::diagnose {

// One finding per process group that diverged (rule "flight_recorder"), and one per rank of a
// group's configuration that left no dump while others did (rule "flight_recorder_missing").
std::vector<Finding> AnalyzeFlightRecords(const std::vector<FlightRecord>& records);

}  // namespace titan::diagnose
