// `titan plan demand | training | serving`: capacity planning (docs/plan.md).
// argv[0] is "titan plan". Returns the exit code: 0 done, 1 failure, 2 usage or bad input.
#pragma once

namespace titan {
int PlanCommand(int argc, char** argv);
}  // namespace titan
