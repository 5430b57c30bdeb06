// Env: where titan reads the machine from. Like node_exporter's --path.procfs/--path.sysfs, the
// roots of /proc and /sys are injectable so that tests run collectors on recorded fixtures.
// Thread safety: immutable after construction; safe to share across threads.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan {

class Env {
 public:
  Env() : Env("/proc", "/sys") {}
  Env(std::string proc_root, std::string sys_root)
      : proc_root_(std::move(proc_root)), sys_root_(std::move(sys_root)) {}

  // "<proc_root>/<relative>", e.g. ProcPath("stat") -> "/proc/stat".
  std::string ProcPath(std::string_view relative) const { return Join(proc_root_, relative); }
  std::string SysPath(std::string_view relative) const { return Join(sys_root_, relative); }
  const std::string& proc_root() const { return proc_root_; }
  const std::string& sys_root() const { return sys_root_; }

  // Reads a whole file of at most `max_bytes` (larger files: OUT_OF_RANGE, nothing is lost on
  // disk). Errors name the path.
  static Result<std::string> ReadFile(const std::string& path, size_t max_bytes = 4 << 20);
  // Names of the entries of a directory, sorted, without "." and "..".
  static Result<std::vector<std::string>> ListDir(const std::string& path);

 private:
  static std::string Join(const std::string& root, std::string_view relative);
  std::string proc_root_;
  std::string sys_root_;
};

// Opens `path` for reading, and only if it is a regular file: a FIFO would block the open or the
// reads forever, and a device (/dev/zero) never ends or is not a trace. The open does not block
// (O_NONBLOCK, then fstat before any read); directories, FIFOs, sockets and devices are refused
// with INVALID_ARGUMENT naming the path, its type and `what` (e.g. "trace"; "" for
// "regular"). Returns the descriptor (blocking
// again, close-on-exec), which the caller closes.
Result<int> OpenRegularFile(const std::string& path, std::string_view what);

// Re-reads one small file (a /proc or /sys file) cheaply: the descriptor stays open and each
// Read() is one pread() at offset 0 into a reused buffer. If the file disappears (a process
// exits), Read() fails with NOT_FOUND and the next Read() tries to reopen it. Only regular files
// are opened (OpenRegularFile): a FIFO under --proc-root never blocks the sampler.
// Thread safety: not thread-safe; one reader per sampling thread.
class FileReader {
 public:
  explicit FileReader(std::string path, size_t max_bytes = 1 << 20);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  // The file's current content; valid until the next Read(). Content beyond max_bytes is an
  // OUT_OF_RANGE error (never silently truncated).
  Result<std::string_view> Read();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  size_t max_bytes_;
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace titan
