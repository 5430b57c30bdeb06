#include "src/supervisor/job_cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
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

// Whether the space-separated list `list` (a cgroup.controllers text) names `name`.
bool ListsWord(std::string_view list, std::string_view name) {
  size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && (list[i] == ' ' || list[i] == '\n' || list[i] == '\t')) ++i;
    size_t end = i;
    while (end < list.size() && list[end] != ' ' && list[end] != '\n' && list[end] != '\t') ++end;
    if (end > i && list.substr(i, end - i) == name) return true;
    i = end;
  }
  return false;
}

std::string Trimmed(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return std::string(text);
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

Result<JobCgroup> JobCgroup::Create(std::string_view name_prefix) {
  TITAN_ASSIGN_OR_RETURN(std::string mountinfo, Env::ReadFile("/proc/self/mountinfo"));
  TITAN_ASSIGN_OR_RETURN(std::string self, Env::ReadFile("/proc/self/cgroup"));
  static std::atomic<int> sequence{0};
  TITAN_ASSIGN_OR_RETURN(
      std::string dir,
      DirectoryFor(mountinfo, self, fmt::format("{}-{}-{}", name_prefix, ::getpid(), sequence++)));
  // A directory of that name is a leftover of an earlier process with our pid: reuse it only
  // once it is empty (rmdir succeeds), never share it.
  if (::mkdir(dir.c_str(), 0755) != 0 &&
      (errno != EEXIST || ::rmdir(dir.c_str()) != 0 || ::mkdir(dir.c_str(), 0755) != 0)) {
    return ErrnoError(errno, fmt::format("mkdir {} (needs root or a delegated cgroup)", dir));
  }
  JobCgroup cgroup = Adopt(dir);
  if (::access(cgroup.kill_path_.c_str(), W_OK) != 0) {
    const int err = errno;
    cgroup.Remove();
    cgroup.dir_.clear();
    return ErrnoError(
        err, fmt::format("{} (cgroup.kill needs Linux 5.14 or later)", dir + "/cgroup.kill"));
  }
  return cgroup;
}

JobCgroup JobCgroup::Adopt(const std::string& dir) {
  JobCgroup cgroup;
  cgroup.dir_ = dir;
  cgroup.procs_path_ = dir + "/cgroup.procs";
  cgroup.kill_path_ = dir + "/cgroup.kill";
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
    v1_dir_ = std::move(other.v1_dir_);
    v1_procs_path_ = std::move(other.v1_procs_path_);
    other.dir_.clear();
    other.v1_dir_.clear();
  }
  return *this;
}

JobCgroup::~JobCgroup() {
  if (!valid()) return;
  Kill().IgnoreError();
  Remove();
}

JobCgroup::MemoryController JobCgroup::ClassifyMemoryController(
    std::string_view own_controllers, std::string_view parent_controllers) {
  if (ListsWord(own_controllers, "memory")) return MemoryController::kEnabled;
  if (ListsWord(parent_controllers, "memory")) return MemoryController::kAvailableNotEnabled;
  return MemoryController::kUnavailable;
}

int64_t JobCgroup::ParseOomKills(std::string_view memory_events) {
  std::istringstream lines{std::string(memory_events)};
  for (std::string key; lines >> key;) {
    int64_t value = 0;
    if (!(lines >> value)) return -1;
    if (key == "oom_kill") return value;
  }
  return -1;
}

Status JobCgroup::SetMemoryMax(int64_t bytes) {
  if (!valid()) return FailedPreconditionError("no cgroup to set memory.max in");
  if (bytes <= 0) return InvalidArgumentError(fmt::format("memory.max of {} bytes", bytes));
  const std::string parent = dir_.substr(0, dir_.rfind('/'));
  auto own = Env::ReadFile(dir_ + "/cgroup.controllers");
  if (!own.ok()) return own.status();
  auto parents = Env::ReadFile(parent + "/cgroup.controllers");
  if (!parents.ok()) return parents.status();
  switch (ClassifyMemoryController(*own, *parents)) {
    case MemoryController::kEnabled:
      break;
    case MemoryController::kUnavailable:
      return SetV1MemoryLimit(
          bytes, fmt::format("the memory controller is not available to the children of {} (its "
                             "cgroup.controllers: '{}')",
                             parent, Trimmed(*parents)));
    case MemoryController::kAvailableNotEnabled: {
      Status enabled = WriteSmallFile(parent + "/cgroup.subtree_control", "+memory");
      if (!enabled.ok()) {
        return FailedPreconditionError(fmt::format(
            "the memory controller is not enabled for the children of {} and enabling it failed "
            "({}; cgroup v2 allows it only where that cgroup holds no process itself: start titan "
            "in a cgroup whose parent enables memory)",
            parent, enabled.message()));
      }
      break;
    }
  }
  return WriteSmallFile(dir_ + "/memory.max", std::to_string(bytes));
}

int64_t JobCgroup::OomKills() const {
  if (!valid()) return -1;
  auto events =
      Env::ReadFile(v1_dir_.empty() ? dir_ + "/memory.events" : v1_dir_ + "/memory.oom_control");
  return events.ok() ? ParseOomKills(*events) : -1;
}

Result<std::string> JobCgroup::V1MemoryDirectoryFor(const std::string& mountinfo,
                                                    const std::string& self_cgroup,
                                                    const std::string& name) {
  // mountinfo: "... ROOT MOUNTPOINT OPTIONS ... - cgroup SOURCE rw,memory".
  std::string mount, root;
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 7, "cgroup ") != 0) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype, source, options;
    tail >> fstype >> source >> options;
    if (("," + options + ",").find(",memory,") == std::string::npos) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev;
    if (fields >> id >> parent >> dev >> root >> mount) break;
  }
  if (mount.empty()) return FailedPreconditionError("no cgroup v1 memory hierarchy is mounted");
  std::string path;
  std::istringstream groups(self_cgroup);
  for (std::string line; std::getline(groups, line);) {
    const size_t c1 = line.find(':');
    const size_t c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    const std::string controllers = "," + line.substr(c1 + 1, c2 - c1 - 1) + ",";
    if (controllers.find(",memory,") != std::string::npos) path = line.substr(c2 + 1);
  }
  if (path.empty() || path[0] != '/' || path.find("/..") != std::string::npos) {
    return FailedPreconditionError(
        "this process has no cgroup v1 memory path in /proc/self/cgroup");
  }
  // The mount shows the hierarchy from `root` down.
  if (root != "/" && path.rfind(root, 0) == 0) path = path.substr(root.size());
  if (path == "/") path.clear();
  return fmt::format("{}{}/{}", mount, path, name);
}

Status JobCgroup::SetV1MemoryLimit(int64_t bytes, std::string why_not_v2) {
  auto fail = [&](std::string why) {
    return FailedPreconditionError(fmt::format(
        "{}; and a cgroup v1 memory cgroup cannot be used either: {}", why_not_v2, why));
  };
  auto mountinfo = Env::ReadFile("/proc/self/mountinfo");
  auto self = Env::ReadFile("/proc/self/cgroup");
  if (!mountinfo.ok() || !self.ok()) return fail("cannot read /proc/self");
  auto dir = V1MemoryDirectoryFor(*mountinfo, *self, dir_.substr(dir_.rfind('/') + 1));
  if (!dir.ok()) return fail(std::string(dir.status().message()));
  if (::mkdir(dir->c_str(), 0755) != 0 && errno != EEXIST) {
    return fail(fmt::format("mkdir {}: {}", *dir, strerror(errno)));
  }
  Status limited = WriteSmallFile(*dir + "/memory.limit_in_bytes", std::to_string(bytes));
  if (!limited.ok()) {
    ::rmdir(dir->c_str());
    return fail(std::string(limited.message()));
  }
  v1_dir_ = *dir;
  v1_procs_path_ = *dir + "/cgroup.procs";
  return OkStatus();
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
  for (const std::string& dir : {dir_, v1_dir_}) {
    if (dir.empty()) continue;
    for (int i = 0; i < 100; ++i) {
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) break;
      if (errno != EBUSY) break;
      ::usleep(10'000);  // killed processes are still exiting
    }
  }
}

}  // namespace titan::supervisor
