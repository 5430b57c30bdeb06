// `titan plan demand`: argv[0] is "titan plan demand". Exit codes as titan plan's.
#pragma once

namespace titan::plan {
int DemandCommand(int argc, char** argv);
}  // namespace titan::plan
