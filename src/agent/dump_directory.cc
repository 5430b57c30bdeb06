#include "src/agent/dump_directory.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "src/base/clock.h"

namespace titan {
namespace {

constexpr std::string_view kPrefix = "titan-transient-";
constexpr std::string_view kSuffix = ".json";

// A dump, or the temporary file of one (WriteFileAtomically's "<path>.tmp-<pid>-<n>").
bool IsDumpFile(std::string_view name) {
  if (!name.starts_with(kPrefix)) return false;
  return name.ends_with(kSuffix) || name.find(".json.tmp-") != std::string_view::npos;
}

}  // namespace

Status DumpDirectory::CheckWritable(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return InvalidArgumentError(
        fmt::format("--dump-dir {}: not a directory; create it or leave --dump-dir out", dir));
  }
  std::string probe = dir + "/.titan-agent-probe-XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) {
    return InvalidArgumentError(
        fmt::format("--dump-dir {}: cannot create files there ({}); make it writable for this "
                    "user (or free space on it), pick another directory, or leave --dump-dir out",
                    dir, std::strerror(errno)));
  }
  close(fd);
  unlink(probe.c_str());
  return OkStatus();
}

bool DumpDirectory::Admit(int64_t now_ns) {
  if (admitted_any_ && now_ns - last_admitted_ns_ < options_.min_interval_ns) return false;
  admitted_any_ = true;
  last_admitted_ns_ = now_ns;
  return true;
}

std::string DumpDirectory::PathFor(uint64_t id, int64_t start_ns) const {
  return fmt::format("{}/{}{}-{}{}", options_.dir, kPrefix, id, start_ns / kNsPerMs, kSuffix);
}

Status DumpDirectory::Prune(DumpPruneResult* removed) const {
  *removed = {};
  struct File {
    std::filesystem::path path;
    std::filesystem::file_time_type mtime;
    uint64_t bytes;
  };
  std::vector<File> files;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(options_.dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (!IsDumpFile(it->path().filename().native())) continue;
    std::error_code stat_ec;
    const auto mtime = it->last_write_time(stat_ec);
    const auto bytes = it->file_size(stat_ec);
    if (stat_ec) continue;  // removed meanwhile, or not a regular file
    files.push_back({it->path(), mtime, bytes});
  }
  if (ec) {
    return UnavailableError(fmt::format("listing --dump-dir {}: {}", options_.dir, ec.message()));
  }
  // Newest first; the same time ordered by name for a stable choice.
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
    return a.mtime != b.mtime ? a.mtime > b.mtime : a.path > b.path;
  });
  uint64_t kept_bytes = 0;
  bool full = false;   // once one dump is removed, every older one goes too
  Status first_error;  // one dump that cannot be removed does not keep the others
  for (size_t i = 0; i < files.size(); ++i) {
    full = full || (i > 0 &&
                    (i >= options_.keep_files || kept_bytes + files[i].bytes > options_.max_bytes));
    if (!full) {
      kept_bytes += files[i].bytes;
      continue;
    }
    if (!std::filesystem::remove(files[i].path, ec) && ec) {
      if (first_error.ok()) {
        first_error = UnavailableError(
            fmt::format("removing old dump {}: {}", files[i].path.string(), ec.message()));
      }
      continue;
    }
    ++removed->files;
    removed->bytes += files[i].bytes;
  }
  return first_error;
}

}  // namespace titan
