// `titan predict`: failure risk per component from a fleet's own history (docs/predict.md).
// argv[0] is "titan predict". Returns the exit code: 0 success, 1 failure, 2 usage error or bad
// input.
#pragma once

namespace titan {
int PredictCommand(int argc, char** argv);
}  // namespace titan
