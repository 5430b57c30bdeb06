#include "src/supervisor/torchrun_args.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "src/base/env.h"
#include "src/base/text.h"

namespace titan::supervisor {
namespace {

constexpr int kMaxNproc = 1024;

// /dev/nvidia0, /dev/nvidia1, ... (not nvidiactl, nvidia-uvm, nvidia-caps).
int CountGpus(const std::string& dev_dir) {
  auto names = Env::ListDir(dev_dir);
  if (!names.ok()) return 0;
  return static_cast<int>(std::count_if(names->begin(), names->end(), [](const std::string& n) {
    return n.size() > 6 && n.compare(0, 6, "nvidia") == 0 &&
           std::all_of(n.begin() + 6, n.end(), [](char c) { return std::isdigit(c) != 0; });
  }));
}

int CountCpus() { return static_cast<int>(std::max<long>(1, ::sysconf(_SC_NPROCESSORS_ONLN))); }

}  // namespace

Result<std::vector<std::string>> WorkerCommand(const ScriptForm& form) {
  if (form.script_and_args.empty()) {
    return InvalidArgumentError(
        "no command; usage: titan run [options] train.py ARGS (as torchrun), -m MODULE ARGS, "
        "or -- COMMAND ARGS");
  }
  const std::string& script = form.script_and_args[0];
  if (script.size() > 1 && script[0] == '-') {
    return InvalidArgumentError(fmt::format(
        "unknown option '{}' (the options of titan run come before the script; see titan run "
        "--help)",
        script));
  }
  if (form.module && form.no_python) {
    return InvalidArgumentError("-m and --no-python exclude each other (as in torchrun)");
  }
  std::vector<std::string> command;
  if (!form.no_python) {
    // -u: unbuffered, so worker output reaches the logs as it happens (torchrun does the same).
    command = {form.python, "-u"};
    if (form.module) command.push_back("-m");
  }
  command.insert(command.end(), form.script_and_args.begin(), form.script_and_args.end());
  return command;
}

Result<int> ResolveNprocPerNode(std::string_view spec, const std::string& dev_dir) {
  int64_t n = 0;
  if (ParseInt64(spec, &n)) {
    if (n < 1 || n > kMaxNproc) {
      return InvalidArgumentError(
          fmt::format("--nproc-per-node {}: expected 1..{}, auto, gpu or cpu", spec, kMaxNproc));
    }
    return static_cast<int>(n);
  }
  if (spec == "cpu") return std::min(CountCpus(), kMaxNproc);
  const int gpus = CountGpus(dev_dir);
  if (spec == "gpu") {
    if (gpus == 0) {
      return InvalidArgumentError(fmt::format(
          "--nproc-per-node gpu: this node has no GPU ({}/nvidiaN); give a number or cpu",
          dev_dir));
    }
    return std::min(gpus, kMaxNproc);
  }
  if (spec == "auto") return std::min(gpus > 0 ? gpus : CountCpus(), kMaxNproc);
  return InvalidArgumentError(
      fmt::format("--nproc-per-node '{}': expected 1..{}, auto, gpu or cpu", spec, kMaxNproc));
}

}  // namespace titan::supervisor
