#include "src/supervisor/leftovers.h"

#include <signal.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/atomic_file.h"
#include "src/base/env.h"
#include "src/base/json_depth.h"
#include "src/supervisor/job_cgroup.h"

namespace titan::supervisor {
namespace {

constexpr long kCgroup2Magic = 0x63677270;  // CGROUP2_SUPER_MAGIC

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool Dead(const LeftoversRecord& record) {
  auto stat = ReadProcStat(record.pid);
  return !stat.ok() || stat->state == 'Z' || stat->start != record.start;
}

// Only a job cgroup's directory (JobCgroup names it titan-<...>) on a cgroup2 file system.
bool LooksLikeJobCgroup(const std::string& dir) {
  const size_t slash = dir.rfind('/');
  if (dir.empty() || dir[0] != '/' || dir.find("/..") != std::string::npos ||
      slash == std::string::npos || dir.compare(slash + 1, 6, "titan-") != 0) {
    return false;
  }
  struct statfs fs = {};
  return ::statfs(dir.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == kCgroup2Magic;
}

int CountLines(const std::string& path) {
  auto text = Env::ReadFile(path);
  if (!text.ok()) return 0;
  int n = 0;
  for (char c : *text) n += c == '\n';
  return n;
}

}  // namespace

Result<ProcStat> ParseProcStat(std::string_view text) {
  const size_t paren = text.rfind(')');
  if (paren == std::string_view::npos) return InvalidArgumentError("no ')' in a stat line");
  // Fields from 3 (state) on, separated by single spaces.
  std::vector<std::string_view> fields;
  size_t pos = paren + 1;
  while (pos < text.size() && fields.size() < 47) {
    while (pos < text.size() && text[pos] == ' ') ++pos;
    size_t end = text.find_first_of(" \n", pos);
    if (end == std::string_view::npos) end = text.size();
    if (end > pos) fields.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  ProcStat stat;
  // fields[0] is field 3 (state), fields[2] field 5 (pgrp), fields[19] field 22 (starttime),
  // fields[45] and [46] fields 48 and 49 (arg_start, arg_end).
  if (fields.size() < 20 || fields[0].size() != 1 || !ParseNumber(fields[2], &stat.pgrp) ||
      !ParseNumber(fields[19], &stat.start)) {
    return InvalidArgumentError("malformed stat line");
  }
  stat.state = fields[0][0];
  if (fields.size() >= 47 &&
      (!ParseNumber(fields[45], &stat.arg_start) || !ParseNumber(fields[46], &stat.arg_end))) {
    stat.arg_start = stat.arg_end = 0;
  }
  return stat;
}

Result<ProcStat> ReadProcStat(pid_t pid) {
  if (pid <= 0) return NotFoundError(fmt::format("no process {}", pid));
  auto text = Env::ReadFile(fmt::format("/proc/{}/stat", pid));
  if (!text.ok()) return NotFoundError(fmt::format("no process {}", pid));
  return ParseProcStat(*text);
}

std::string FormatLeftovers(const LeftoversRecord& record) {
  nlohmann::json groups = nlohmann::json::array();
  for (const RecordedGroup& g : record.groups) {
    groups.push_back({{"pgid", g.pgid}, {"leader_start", g.leader_start}});
  }
  return nlohmann::json{{"pid", record.pid},
                        {"start", record.start},
                        {"groups", groups},
                        {"cgroup", record.cgroup_dir}}
             .dump() +
         "\n";
}

Result<LeftoversRecord> ParseLeftovers(std::string_view text) {
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(text, "leftovers record"));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j["pid"].is_number_unsigned() || !j["start"].is_number_unsigned() ||
      !j["groups"].is_array() || !j["cgroup"].is_string()) {
    return InvalidArgumentError("malformed leftovers record");
  }
  LeftoversRecord record;
  record.pid = j["pid"].get<pid_t>();
  record.start = j["start"].get<uint64_t>();
  record.cgroup_dir = j["cgroup"].get<std::string>();
  for (const nlohmann::json& g : j["groups"]) {
    if (!g.is_object() || !g["pgid"].is_number_unsigned() ||
        !g["leader_start"].is_number_unsigned() || g["pgid"].get<int64_t>() <= 1 ||
        g["pgid"].get<int64_t>() > INT32_MAX) {
      return InvalidArgumentError("malformed process group in the leftovers record");
    }
    record.groups.push_back({g["pgid"].get<pid_t>(), g["leader_start"].get<uint64_t>()});
  }
  return record;
}

Result<LeftoversRecord> OwnLeftoversRecord() {
  TITAN_ASSIGN_OR_RETURN(ProcStat self, ReadProcStat(::getpid()));
  LeftoversRecord record;
  record.pid = ::getpid();
  record.start = self.start;
  return record;
}

std::string LeftoversCleanup::Describe() const {
  std::string text = fmt::format(
      "titan run (pid {}) died without cleaning up: killed {} process(es) in {} process group(s)",
      previous_pid, killed_processes, killed_groups.size());
  if (!cgroup_dir.empty()) {
    text += fmt::format(", {} process(es) in cgroup {} ({})", cgroup_processes, cgroup_dir,
                        cgroup_removed ? "removed" : "not removed");
  }
  return text;
}

Result<LeftoversCleanup> CleanUpLeftovers(const std::string& path) {
  LeftoversCleanup done;
  auto text = Env::ReadFile(path);
  if (!text.ok()) {
    if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return done;
    return text.status();
  }
  auto parsed = ParseLeftovers(*text);
  if (!parsed.ok()) return parsed.status().WithContext(path);
  const LeftoversRecord& record = *parsed;
  if (!Dead(record)) {
    return FailedPreconditionError(fmt::format(
        "another titan run (pid {}) is using this run directory ({})", record.pid, path));
  }
  done.found = true;
  done.previous_pid = record.pid;
  // One pass over /proc: pgrp -> start times of its members.
  std::map<pid_t, std::vector<std::pair<pid_t, uint64_t>>> members;
  if (auto names = Env::ListDir("/proc"); names.ok()) {
    for (const std::string& name : *names) {
      pid_t pid = 0;
      if (!ParseNumber(std::string_view(name), &pid)) continue;
      auto stat = ReadProcStat(pid);
      if (stat.ok() && stat->state != 'Z') members[stat->pgrp].push_back({pid, stat->start});
    }
  }
  const bool cgroup = !record.cgroup_dir.empty() && LooksLikeJobCgroup(record.cgroup_dir);
  if (cgroup) {
    done.cgroup_dir = record.cgroup_dir;
    done.cgroup_processes = CountLines(record.cgroup_dir + "/cgroup.procs");
  }
  for (const RecordedGroup& g : record.groups) {
    auto it = members.find(g.pgid);
    if (it == members.end()) continue;
    bool ours = false;
    bool leader_seen = false;
    for (const auto& [pid, start] : it->second) {
      if (pid == g.pgid) {
        leader_seen = true;
        ours = start == g.leader_start;
        break;
      }
      ours |= start >= g.leader_start;
    }
    if (leader_seen && !ours) continue;  // the pid was reused: a stranger's group
    if (!ours || ::kill(-g.pgid, SIGKILL) != 0) continue;
    done.killed_groups.push_back(g.pgid);
    done.killed_processes += static_cast<int>(it->second.size());
  }
  if (cgroup) {
    JobCgroup cgroup = JobCgroup::Adopt(record.cgroup_dir);
    cgroup.Kill().IgnoreError();
    cgroup.Remove();
    done.cgroup_removed = ::access(record.cgroup_dir.c_str(), F_OK) != 0;
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError(errno, "removing " + path);
  }
  return done;
}

}  // namespace titan::supervisor
