#include "src/base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

namespace titan {
namespace {

Status WriteAll(int fd, std::string_view content, const std::string& what) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "writing " + what);
    }
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

// A temporary name beside `path`, unique per process and call.
std::string TemporaryName(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}.tmp-{}-{}", path, getpid(), counter.fetch_add(1));
}

// Where the bytes for `path` go: a symlink's target (the link stays a link), and whether that
// is something other than a regular file or a new name: a device, FIFO or socket is written in
// place (renaming over /dev/null would replace the device node with a file).
struct Target {
  std::string path;
  bool in_place = false;
};

Result<Target> ResolveTarget(const std::string& path) {
  Target target{path, false};
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return target;  // a new file (or an error the write names)
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const std::filesystem::path resolved = std::filesystem::weakly_canonical(path, ec);
    if (ec) return ErrnoError(ec.value(), "resolving the symbolic link " + path);
    target.path = resolved.string();
    if (stat(target.path.c_str(), &st) != 0) return target;  // a dangling link: create its target
  }
  if (S_ISDIR(st.st_mode)) {
    return FailedPreconditionError(
        fmt::format("{} is a directory; name a file to write (e.g. {}/out.json)", path, path));
  }
  target.in_place = !S_ISREG(st.st_mode);
  return target;
}

Result<int> OpenInPlace(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "opening " + path);
  return fd;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  if (path == "-") return WriteAll(STDOUT_FILENO, content, "standard output");
  AtomicFileWriter writer;
  TITAN_RETURN_IF_ERROR(writer.Open(path));
  std::fwrite(content.data(), 1, content.size(), writer.file());  // Commit checks the stream
  return writer.Commit();
}

Status RefuseOutputThatIsAnInput(const std::string& output, const std::vector<std::string>& inputs,
                                 std::string_view flag) {
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (std::filesystem::equivalent(input, output, ec)) {
      return InvalidArgumentError(fmt::format(
          "{} {} is one of the inputs ({}): choose another output file", flag, output, input));
    }
  }
  return OkStatus();
}

Status RefuseClashingOutputs(const std::vector<OutputFlag>& outputs,
                             const std::vector<std::string>& inputs) {
  std::vector<std::pair<std::filesystem::path, const OutputFlag*>> seen;
  for (const OutputFlag& out : outputs) {
    if (out.path.empty() || out.path == "-") continue;
    TITAN_RETURN_IF_ERROR(RefuseOutputThatIsAnInput(out.path, inputs, out.flag));
    // Absolute first: weakly_canonical leaves a relative path none of whose prefix exists
    // ("x.jsonl") relative, and "./x.jsonl" then differed from it.
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(out.path, ec);
    std::filesystem::path resolved = std::filesystem::weakly_canonical(absolute, ec);
    if (ec) resolved = absolute.lexically_normal();
    for (const auto& [path, other] : seen) {
      if (path == resolved) {
        return InvalidArgumentError(
            fmt::format("{} {} is also the file of {}: give each output "
                        "its own file",
                        out.flag, out.path, other->flag));
      }
    }
    seen.emplace_back(std::move(resolved), &out);
  }
  return OkStatus();
}

AtomicFileWriter::~AtomicFileWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    if (!in_place_) unlink(tmp_.c_str());
  }
}

Status AtomicFileWriter::Open(const std::string& path) {
  TITAN_ASSIGN_OR_RETURN(const Target target, ResolveTarget(path));
  path_ = target.path;
  in_place_ = target.in_place;
  int fd = -1;
  if (in_place_) {
    tmp_.clear();
    TITAN_ASSIGN_OR_RETURN(fd, OpenInPlace(path_));
  } else {
    tmp_ = TemporaryName(path_);
    fd = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError(errno, "creating " + tmp_);
  }
  file_ = fdopen(fd, "w");
  if (file_ == nullptr) {
    const int error = errno;
    close(fd);
    if (!in_place_) unlink(tmp_.c_str());
    return ErrnoError(error, "opening " + (in_place_ ? path_ : tmp_));
  }
  return OkStatus();
}

Status AtomicFileWriter::Commit() {
  if (file_ == nullptr) return FailedPreconditionError("AtomicFileWriter::Commit without Open");
  Status status;
  const std::string& written = in_place_ ? path_ : tmp_;
  if (std::fflush(file_) != 0 || std::ferror(file_))
    status = ErrnoError(errno, "writing " + written);
  if (status.ok() && !in_place_ && fsync(fileno(file_)) != 0) {
    status = ErrnoError(errno, "flushing " + tmp_);
  }
  if (std::fclose(file_) != 0 && status.ok()) status = ErrnoError(errno, "closing " + written);
  file_ = nullptr;
  if (in_place_) return status;
  if (status.ok() && rename(tmp_.c_str(), path_.c_str()) != 0) {
    status = ErrnoError(errno, "renaming " + tmp_ + " to " + path_);
  }
  if (!status.ok()) unlink(tmp_.c_str());
  return status;
}

}  // namespace titan
