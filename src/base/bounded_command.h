// RunBoundedCommand: runs an outside command (scontrol, kubectl, a user's script, eu-stack) with
// a deadline, its output captured up to a bound, so that a command that hangs or floods cannot
// stall or bloat the caller.
//
// The command runs in a new process group, stdin from /dev/null, stdout and stderr into one
// capture. At the deadline, or as soon as it exits, its whole process group is SIGKILLed: nothing
// it started outlives the call. Its exit status comes back through a pipe from a small
// intermediate process rather than from the caller's waitpid, so the call is safe in a process
// that reaps every child with waitpid(-1) on another thread (titan run does).
//
// Thread safety: callable from any thread; blocks the calling thread for at most about
// timeout_ns + 1 s. The caller's signal mask is not inherited by the command (it starts with an
// empty mask).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace titan {

struct BoundedCommandResult {
  enum class End : uint8_t {
    kExited,      // exit_code is the command's exit code (127: it could not be executed)
    kSignaled,    // killed by signal `signal` (not by the deadline)
    kTimedOut,    // still running at the deadline: its group was killed
    kNotStarted,  // fork or pipe failed; `output` says why
  };
  End end = End::kNotStarted;
  int exit_code = -1;
  int signal = 0;
  std::string output;  // stdout and stderr interleaved, at most max_output_bytes
  bool output_truncated = false;
  int64_t elapsed_ns = 0;

  bool ok() const { return end == End::kExited && exit_code == 0; }
  // "exit code 1", "killed by signal 9", "timed out after 10.0 s", "not started: ...".
  std::string Describe() const;
};

// argv[0] is looked up on PATH. An empty argv is kNotStarted.
BoundedCommandResult RunBoundedCommand(const std::vector<std::string>& argv, int64_t timeout_ns,
                                       size_t max_output_bytes);

}  // namespace titan
