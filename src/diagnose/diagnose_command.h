// `titan diagnose PATH... [--json FILE]`: the root cause of a failed, hung or slow job.
// argv[0] is "titan diagnose". Returns the exit code: 0 a diagnosis was made (whether or not it
// found incidents), 1 the inputs could not be read, 2 a usage error.
#pragma once

namespace titan {
int DiagnoseCommand(int argc, char** argv);
}  // namespace titan
