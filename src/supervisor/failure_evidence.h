// What titan run gathers when a generation fails, and its diagnosis (src/diagnose):
//
//   * PyTorch's NCCL Flight Recorder, turned on at spawn where the user has not
//     (FlightRecorderEnv): TORCH_NCCL_TRACE_BUFFER_SIZE / TORCH_FR_BUFFER_SIZE=2000,
//     TORCH_NCCL_DUMP_ON_TIMEOUT=1, the dump prefix TORCH_NCCL_DEBUG_INFO_TEMP_FILE /
//     TORCH_FR_DUMP_TEMP_FILE and the dump pipe TORCH_NCCL_DEBUG_INFO_PIPE_FILE in the run
//     directory (fr/gen<G>/). On a hang, RequestFlightRecorderDumps writes to every rank's pipe
//     (it exists only where the buffer was on when the process group was built) and waits a bounded
//     time for the dumps.
//   * The kernel's log of the generation's window (/dev/kmsg, where readable), as ISO-timed lines.
//   * The diagnosis of the generation's files (its rank logs, the event log, the kernel lines, the
//     dumps), reduced to the incident of this failure (FailureFacts).
//
// Thread safety: functions are reentrant; each blocks its caller at most the bound it is given.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/diagnose/incidents.h"
#include "src/supervisor/failure_policy.h"

namespace titan::supervisor {

// The Flight Recorder variables to add to `env` ("KEY=VALUE" entries) for dumps under `dir`;
// none that `env` already sets.
std::vector<std::string> FlightRecorderEnv(const std::vector<std::string>& env,
                                           const std::string& dir);

struct DumpRequest {
  int pipes = 0;  // ranks whose dump pipe existed and took the request
  int dumps = 0;  // dump files present when the wait ended
  double waited_s = 0;
};
// Writes to each of `ranks`' dump pipes under `dir` and waits up to `wait_ns` for their dumps to
// appear and stop growing. Never blocks on a pipe nobody reads (O_NONBLOCK).
DumpRequest RequestFlightRecorderDumps(const std::string& dir, const std::vector<int>& ranks,
                                       int64_t wait_ns);

// Appends the kernel's log lines from `since_wall_ns` on to `path` as "<ISO time> <message>";
// at most `max_bytes`. FAILED_PRECONDITION (saying why) where /dev/kmsg cannot be read.
Result<int> CaptureKernelLog(const std::string& path, int64_t since_wall_ns, size_t max_bytes);

// Diagnoses `files` and returns the incident of the failure that began at or after
// `since_wall_ns` (the generation's start; untimed incidents count too), as FailureFacts;
// `incident_json` gets its JSON (IncidentJson), null when none was found. `host_kernel_log` (one
// of `files`, or empty) is the whole host's kernel log: its lines that name a process (an OOM
// kill, a segfault, an Xid's pid) count only when the process is one of `worker_pids` (another
// job's OOM kill on this host is not this failure); lines that name none (a GPU off the bus,
// PCIe AER) count as they are.
FailureFacts DiagnoseFailure(const std::vector<std::string>& files, int64_t since_wall_ns,
                             const std::string& kind, int64_t step,
                             const std::string& host_kernel_log,
                             const std::vector<int64_t>& worker_pids,
                             nlohmann::json* incident_json);

}  // namespace titan::supervisor
