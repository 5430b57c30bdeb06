#include "src/supervisor/job_cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <sstream>

#include <fmt/format.h>

#include "src/base/env.h"

namespace titan::supervisor {
namespace {

// Writes `text` to an existing file; errno-style failure as a Status naming it.
Status WriteSmallFile(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "open " + path);
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) return ErrnoError(err, "write " + path);
  return OkStatus();
}

}  // namespace

Result<std::string> JobCgroup::DirectoryFor(const std::string& mountinfo,
                                            const std::string& self_cgroup,
                                            const std::string& name) {
  // mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPEROPTIONS".
  std::string mount;
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev, root, point;
    if (fields >> id >> parent >> dev >> root >> point && root == "/") {
      mount = point;
      break;
    }
  }
  if (mount.empty()) return FailedPreconditionError("no cgroup v2 hierarchy is mounted");
  // /proc/self/cgroup: "0::/path" is the v2 line.
  std::string path;
  bool found = false;
  std::istringstream groups(self_cgroup);
  for (std::string line; std::getline(groups, line);) {
    if (line.rfind("0::", 0) == 0) {
      path = line.substr(3);
      found = true;
      break;
    }
  }
  if (!found || path.empty() || path[0] != '/' || path.find("/..") != std::string::npos) {
    return FailedPreconditionError("this process has no cgroup v2 path in /proc/self/cgroup");
  }
  if (path.size() > 1 && path.ends_with(" (deleted)")) {
    return FailedPreconditionError("this process's cgroup was deleted");
  }
  if (path == "/") path.clear();
  return fmt::format("{}{}/{}", mount, path, name);
}

Result<JobCgroup> JobCgroup::Create() {
  TITAN_ASSIGN_OR_RETURN(std::string mountinfo, Env::ReadFile("/proc/self/mountinfo"));
  TITAN_ASSIGN_OR_RETURN(std::string self, Env::ReadFile("/proc/self/cgroup"));
  static std::atomic<int> sequence{0};
  TITAN_ASSIGN_OR_RETURN(
      std::string dir,
      DirectoryFor(mountinfo, self, fmt::format("titan-run-{}-{}", ::getpid(), sequence++)));
  // A directory of that name is a leftover of an earlier process with our pid: reuse it only
  // once it is empty (rmdir succeeds), never share it.
  if (::mkdir(dir.c_str(), 0755) != 0 &&
      (errno != EEXIST || ::rmdir(dir.c_str()) != 0 || ::mkdir(dir.c_str(), 0755) != 0)) {
    return ErrnoError(errno, fmt::format("mkdir {} (needs root or a delegated cgroup)", dir));
  }
  JobCgroup cgroup;
  cgroup.dir_ = dir;
  cgroup.procs_path_ = dir + "/cgroup.procs";
  cgroup.kill_path_ = dir + "/cgroup.kill";
  if (::access(cgroup.kill_path_.c_str(), W_OK) != 0) {
    const int err = errno;
    cgroup.Remove();
    cgroup.dir_.clear();
    return ErrnoError(
        err, fmt::format("{} (cgroup.kill needs Linux 5.14 or later)", dir + "/cgroup.kill"));
  }
  return cgroup;
}

JobCgroup& JobCgroup::operator=(JobCgroup&& other) noexcept {
  if (this != &other) {
    if (valid()) {
      Kill().IgnoreError();
      Remove();
    }
    dir_ = std::move(other.dir_);
    procs_path_ = std::move(other.procs_path_);
    kill_path_ = std::move(other.kill_path_);
    other.dir_.clear();
  }
  return *this;
}

JobCgroup::~JobCgroup() {
  if (!valid()) return;
  Kill().IgnoreError();
  Remove();
}

bool JobCgroup::JoinSelf(const char* procs_path) {
  const int fd = ::open(procs_path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "0", 1) == 1;
  ::close(fd);
  return ok;
}

Status JobCgroup::Kill() const {
  if (!valid()) return OkStatus();
  return WriteSmallFile(kill_path_, "1");
}

void JobCgroup::Remove() {
  if (!valid()) return;
  for (int i = 0; i < 100; ++i) {
    if (::rmdir(dir_.c_str()) == 0 || errno == ENOENT) break;
    if (errno != EBUSY) break;
    ::usleep(10'000);  // killed processes are still exiting
  }
}

}  // namespace titan::supervisor
