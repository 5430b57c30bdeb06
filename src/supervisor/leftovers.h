// Leftovers: what a `titan run` must clean up if it dies, recorded in its run directory so that
// the next `titan run` with that run directory cleans it up when neither titan run nor its
// guardian (guardian.h) could: both SIGKILLed (`pkill -9 titan`), the machine's OOM killer.
//
// The record (a small JSON file, replaced atomically on every change) holds the recording
// process's pid and start time (field 22 of /proc/PID/stat, so that a reused pid is not taken
// for it), each worker process group with its leader's start time, and the job cgroup
// (job_cgroup.h). CleanUpLeftovers() acts on a record only when its owner is dead (pid gone, a
// zombie, or a different start time):
//  - a process group whose leader is alive with the recorded start time is SIGKILLed; one whose
//    leader lives with another start time is a stranger's (the pid was reused) and is left;
//  - a process group whose leader is gone (the usual case: PR_SET_PDEATHSIG killed the worker,
//    its children live on) is SIGKILLed if a member started no earlier than the recorded leader.
//    A process group id is not reused while any member lives, so this misses only where our
//    group emptied and a stranger's group took its number and outlived its own leader;
//  - the cgroup, if it still exists, is killed (cgroup.kill) and removed. Only a directory named
//    like a job cgroup (titan-*) on a cgroup2 file system is touched.
// A pid namespace is assumed to be shared by every titan run that uses one run directory.
//
// Thread safety: free functions without shared state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan::supervisor {

inline constexpr char kLeftoversFile[] = "leftovers.json";

struct RecordedGroup {
  pid_t pgid = 0;
  uint64_t leader_start = 0;  // clock ticks since boot, /proc/PID/stat field 22
};

struct LeftoversRecord {
  pid_t pid = 0;  // the titan run that recorded it
  uint64_t start = 0;
  std::vector<RecordedGroup> groups;
  std::string cgroup_dir;  // empty: none
};

// The fields of a /proc/PID/stat text that identify a process (the command name may hold spaces
// and parentheses: fields are counted after the last ')').
struct ProcStat {
  char state = '?';
  pid_t pgrp = 0;
  uint64_t start = 0;
  // Fields 48 and 49 (Linux 3.5+, 0 when absent): where the argument strings lie in memory.
  uint64_t arg_start = 0, arg_end = 0;
};
Result<ProcStat> ParseProcStat(std::string_view text);
// /proc/<pid>/stat; NOT_FOUND when the process is gone.
Result<ProcStat> ReadProcStat(pid_t pid);

std::string FormatLeftovers(const LeftoversRecord& record);
Result<LeftoversRecord> ParseLeftovers(std::string_view text);

// The calling process's record, without groups or cgroup.
Result<LeftoversRecord> OwnLeftoversRecord();

struct LeftoversCleanup {
  bool found = false;  // a record of a dead titan run was there
  pid_t previous_pid = 0;
  std::vector<pid_t> killed_groups;
  int killed_processes = 0;  // members of killed_groups seen before the kill
  std::string cgroup_dir;    // the recorded cgroup, if it still existed
  int cgroup_processes = 0;  // processes in it before any kill (group members included)
  bool cgroup_removed = false;
  // "titan run (pid 123) died without cleaning up: killed 5 process(es) in 2 process group(s),
  // 1 process(es) in cgroup D (removed)".
  std::string Describe() const;
};

// Reads the record at `path` (no file: found = false) and, if its owner is dead, kills what it
// names (see above) and removes the file. FAILED_PRECONDITION when the owner is alive (another
// titan run uses the directory); a malformed record is INVALID_ARGUMENT (the caller warns; the
// next record replaces it).
Result<LeftoversCleanup> CleanUpLeftovers(const std::string& path);

}  // namespace titan::supervisor
