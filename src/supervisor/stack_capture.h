// Stacks of hung workers for the event log: each running worker's Python stacks (SIGUSR1 ->
// faulthandler, registered by titan.client, written to its TITAN_STACK_FILE) with the kernel's
// view (state, wait channel, kernel stack) and the native frames of every thread (eu-stack;
// native_stack.h). One "stack" event per running worker.
//
// Thread safety: reentrant; blocks the caller up to `stack_wait_ns` plus 10 s for native stacks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "src/supervisor/run_log.h"
#include "src/supervisor/worker_group.h"

namespace titan::supervisor {

// The state letter of /proc/PID/stat ('R', 'S', 'T', ...); '?' when unreadable.
char ProcState(pid_t pid);

// Signals every running worker and waits up to `stack_wait_ns` for its stack file (StackFile
// under `run_dir`) to grow and settle, then writes the stack events to `log`.
void CaptureStacks(const std::vector<Worker>& workers, const std::string& run_dir,
                   int64_t stack_wait_ns, RunLog& log);

}  // namespace titan::supervisor
