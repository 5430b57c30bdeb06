#include "src/supervisor/native_stack.h"

#include <string>

#include <fmt/format.h>

#include "src/base/bounded_command.h"

namespace titan::supervisor {

NativeStacks CaptureNativeStacks(pid_t pid, int64_t timeout_ns, size_t max_bytes) {
  BoundedCommandResult r =
      RunBoundedCommand({"eu-stack", "-p", std::to_string(pid)}, timeout_ns, max_bytes);
  if (r.end == BoundedCommandResult::End::kNotStarted) return {false, r.output};
  if (r.end == BoundedCommandResult::End::kTimedOut) {
    return {false, fmt::format("eu-stack -p {} did not finish within {:.1f} s (a thread in "
                               "uninterruptible sleep?); partial output:\n{}",
                               pid, timeout_ns / 1e9, r.output)};
  }
  if (r.end == BoundedCommandResult::End::kExited && r.exit_code == 127 &&
      r.output.find("not found on PATH") != std::string::npos) {
    return {false, "eu-stack not found: install elfutils for native stacks\n"};
  }
  // eu-stack exits 1 when some thread could not be unwound to the end but still prints the
  // frames it found: keep them.
  if (!r.ok() && r.output.find("TID ") != std::string::npos) return {true, r.output};
  return {r.ok(), r.output};
}

}  // namespace titan::supervisor
