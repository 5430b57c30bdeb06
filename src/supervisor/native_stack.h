// Native (C/C++) stacks of a hung worker, for the event log: the frames of every thread, so a
// rank stuck in an NCCL/gloo wait, a CUDA call or a lock shows where, next to its Python stack.
//
// Uses `eu-stack -p PID` (Debian elfutils, installed by scripts/bootstrap.sh): it attaches with
// ptrace, unwinds every thread, detaches, and typically takes tens of milliseconds even on a
// PyTorch process. ptrace needs root, CAP_SYS_PTRACE, or kernel.yama.ptrace_scope 0; elsewhere
// the result says why there is no stack. The tool is killed after `timeout_ns` (a thread in
// uninterruptible sleep cannot be stopped), and its output is cut at `max_bytes`.
// Thread safety: reentrant; runs the tool through RunBoundedCommand (base/bounded_command.h), so
// a caller that reaps every child with waitpid(-1) does not lose its result.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace titan::supervisor {

struct NativeStacks {
  bool ok = false;
  std::string text;  // the frames (ok), or why there are none (e.g. "eu-stack not found: ...")
};

NativeStacks CaptureNativeStacks(pid_t pid, int64_t timeout_ns, size_t max_bytes = 64 << 10);

}  // namespace titan::supervisor
