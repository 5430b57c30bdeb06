// `titan plan failures` (argv[0] "titan plan failures"), and what the training plan shares with
// it: reading a fleet history (saying what was skipped) and describing a fit.
#pragma once

#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/fleet/history.h"
#include "src/plan/failure_fit.h"

namespace titan::plan {

int FailuresCommand(int argc, char** argv);

Result<fleet::FleetHistory> LoadFleetHistory(const std::vector<std::string>& paths);

// The fit for people: window, failures by class, repairs, variation.
std::string FormatFit(const FailureFit& fit);

}  // namespace titan::plan
