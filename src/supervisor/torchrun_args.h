// torchrun's command-line forms, so that `torchrun ARGS` becomes `titan run ARGS`:
//   titan run [options] train.py --lr 1          the script, run with the Python interpreter
//   titan run [options] -m pkg.train --lr 1      a module (python -m)
//   titan run [options] --no-python ./train.sh   the command itself
//   titan run [options] -- COMMAND ARGS...       titan's own form (any command)
// and --nproc-per-node N | auto | gpu | cpu. Pure functions; errors are usage errors naming the
// flag or argument and what to do.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan::supervisor {

struct ScriptForm {
  std::vector<std::string> script_and_args;  // what CLI11 left after the options ("remaining")
  bool module = false;                       // -m / --module
  bool no_python = false;                    // --no-python / --no_python
  std::string python = "python3";            // --python: the interpreter (looked up in PATH)
};

// The worker command of a script form. INVALID_ARGUMENT when there is no script, when it looks
// like an unknown option (a misspelt flag lands here), or for -m with --no-python.
Result<std::vector<std::string>> WorkerCommand(const ScriptForm& form);

// Workers per node, as torchrun decides them: a number 1..1024, "gpu" (the GPUs of this node:
// /dev/nvidiaN devices under `dev_dir`; an error when there are none), "cpu" (online CPUs), or
// "auto" (the GPUs if any, else the CPUs). Capped at 1024.
Result<int> ResolveNprocPerNode(std::string_view spec, const std::string& dev_dir = "/dev");

}  // namespace titan::supervisor
