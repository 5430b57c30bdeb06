// JobCgroup: a cgroup v2 directory that holds every worker of one `titan run`, so that stopping
// the job also reaches processes that left their worker's process group (a `setsid` daemon, a
// double fork): writing "1" to its cgroup.kill SIGKILLs everything inside at once (Linux 5.14+).
//
// Created as a child of titan run's own cgroup: <cgroup2 mount><path from /proc/self/cgroup>/
// titan-run-<pid>-<n> (n counts the JobCgroups of this process, so two never share one). That needs
// write access there: root, or a delegated subtree (a systemd unit with Delegate=yes). Where it is
// missing (or there is no cgroup v2 hierarchy, or no cgroup.kill), Create() returns an error that
// says why and titan run keeps to process groups (WorkerGroup logs it once). A worker joins between
// fork and exec by writing "0" to procs_path() (JoinSelf, async-signal- safe).
//
// SetMemoryMax() caps the cgroup's memory (memory.max; the kernel's OOM killer then acts inside
// it). That needs the memory controller enabled for the parent's children; where the parent has
// the controller but has not enabled it, SetMemoryMax tries "+memory" on the parent's
// cgroup.subtree_control (cgroup v2 refuses that where the parent itself holds processes, except
// at the root). On a hybrid v1/v2 machine the memory controller belongs to cgroup v1: there
// SetMemoryMax makes a v1 memory cgroup of the same name beside titan run's own
// (memory.limit_in_bytes; OOM kills counted in memory.oom_control) that the workers join too
// (memory_procs_path()); where that fails too, it says why. Thread safety: none; owned by
// WorkerGroup's thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace titan::supervisor {

class JobCgroup {
 public:
  // Makes the directory. `mountinfo` and `self_cgroup` are the texts of /proc/self/mountinfo and
  // /proc/self/cgroup (parameters for tests; Create() reads the real ones).
  // `name_prefix` names the directory: <prefix>-<pid>-<n>.
  static Result<JobCgroup> Create(std::string_view name_prefix = "titan-run");
  static Result<std::string> DirectoryFor(const std::string& mountinfo,
                                          const std::string& self_cgroup, const std::string& name);

  // Takes charge of an existing job cgroup directory (a leftover of a dead titan run, see
  // leftovers.h): Kill(), Remove() and destruction act on it. Does not check `dir`.
  static JobCgroup Adopt(const std::string& dir);

  JobCgroup() = default;
  JobCgroup(JobCgroup&& other) noexcept { *this = std::move(other); }
  JobCgroup& operator=(JobCgroup&& other) noexcept;
  ~JobCgroup();  // Kill() and Remove()

  bool valid() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  const std::string& procs_path() const { return procs_path_; }
  const std::string& kill_path() const { return kill_path_; }
  // The cgroup v1 memory cgroup's procs file, when memory is limited there (hybrid machines);
  // empty otherwise. A worker joins it as it joins procs_path().
  const std::string& memory_procs_path() const { return v1_procs_path_; }
  // The cgroup v1 memory cgroup for this job's name: <v1 memory mount><path of this process in
  // /proc/self/cgroup's memory line>/<name> (parameters for tests).
  static Result<std::string> V1MemoryDirectoryFor(const std::string& mountinfo,
                                                  const std::string& self_cgroup,
                                                  const std::string& name);

  // Whether the memory controller is usable in a child cgroup, from the texts of the child's and
  // its parent's cgroup.controllers (parameters for tests).
  enum class MemoryController { kEnabled, kAvailableNotEnabled, kUnavailable };
  static MemoryController ClassifyMemoryController(std::string_view own_controllers,
                                                   std::string_view parent_controllers);
  // The "oom_kill N" count of a memory.events text; -1 if absent.
  static int64_t ParseOomKills(std::string_view memory_events);

  // Sets memory.max to `bytes` (> 0). FAILED_PRECONDITION saying why where the memory
  // controller is not available here (the cgroup stays usable without a limit).
  Status SetMemoryMax(int64_t bytes);
  // OOM kills in this cgroup so far (memory.events, or v1's memory.oom_control); -1 without a
  // memory controller.
  int64_t OomKills() const;

  // In a forked child before exec: moves the calling process into the cgroup. Async-signal-safe.
  static bool JoinSelf(const char* procs_path);
  // SIGKILLs every process in the cgroup.
  Status Kill() const;
  // Removes the directory once it is empty (waits up to ~1 s for killed processes to go).
  void Remove();

 private:
  Status SetV1MemoryLimit(int64_t bytes, std::string why_not_v2);
  std::string dir_, procs_path_, kill_path_;
  std::string v1_dir_, v1_procs_path_;  // cgroup v1 memory (hybrid machines); empty if unused
};

}  // namespace titan::supervisor
