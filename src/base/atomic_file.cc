#include "src/base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

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

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  if (path == "-") {
    Status s = WriteAll(STDOUT_FILENO, content, "standard output");
    return s;
  }
  const std::string tmp = TemporaryName(path);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, "creating " + tmp);
  Status status = WriteAll(fd, content, tmp);
  if (status.ok() && fsync(fd) != 0) status = ErrnoError(errno, "flushing " + tmp);
  if (close(fd) != 0 && status.ok()) status = ErrnoError(errno, "closing " + tmp);
  if (status.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoError(errno, "renaming " + tmp + " to " + path);
  }
  if (!status.ok()) unlink(tmp.c_str());
  return status;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    unlink(tmp_.c_str());
  }
}

Status AtomicFileWriter::Open(const std::string& path) {
  path_ = path;
  tmp_ = TemporaryName(path);
  const int fd = open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, "creating " + tmp_);
  file_ = fdopen(fd, "w");
  if (file_ == nullptr) {
    const int error = errno;
    close(fd);
    unlink(tmp_.c_str());
    return ErrnoError(error, "opening " + tmp_);
  }
  return OkStatus();
}

Status AtomicFileWriter::Commit() {
  if (file_ == nullptr) return FailedPreconditionError("AtomicFileWriter::Commit without Open");
  Status status;
  if (std::fflush(file_) != 0 || std::ferror(file_)) status = ErrnoError(errno, "writing " + tmp_);
  if (status.ok() && fsync(fileno(file_)) != 0) status = ErrnoError(errno, "flushing " + tmp_);
  if (std::fclose(file_) != 0 && status.ok()) status = ErrnoError(errno, "closing " + tmp_);
  file_ = nullptr;
  if (status.ok() && rename(tmp_.c_str(), path_.c_str()) != 0) {
    status = ErrnoError(errno, "renaming " + tmp_ + " to " + path_);
  }
  if (!status.ok()) unlink(tmp_.c_str());
  return status;
}

}  // namespace titan
