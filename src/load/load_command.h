// `titan load` and `titan load sweep`: argv[0] is "titan load". Returns the process exit code
// (0 ok, 1 error, 2 usage, 3 SLO missed, 4 invalid run).
#pragma once

namespace titan::load {
int LoadCommand(int argc, char** argv);
}  // namespace titan::load
