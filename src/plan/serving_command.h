// `titan plan serving`: argv[0] is "titan plan serving". Exit codes as titan plan's.
#pragma once

namespace titan::plan {
int ServingCommand(int argc, char** argv);
}  // namespace titan::plan
