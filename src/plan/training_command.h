// `titan plan training`: argv[0] is "titan plan training". Exit codes: 0 a plan, 3 no size meets
// the probability (the best tried is shown), 2 bad input, 1 other failures.
#pragma once

namespace titan::plan {
int TrainingCommand(int argc, char** argv);
}  // namespace titan::plan
