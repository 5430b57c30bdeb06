#include "src/base/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

namespace titan {

std::string Env::Join(const std::string& root, std::string_view relative) {
  std::string out = root;
  if (!out.empty() && out.back() != '/') out += '/';
  while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
  out += relative;
  return out;
}

Result<std::string> Env::ReadFile(const std::string& path, size_t max_bytes) {
  FileReader reader(path, max_bytes);
  TITAN_ASSIGN_OR_RETURN(std::string_view content, reader.Read());
  return std::string(content);
}

Result<std::vector<std::string>> Env::ListDir(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return ErrnoError(errno, "listing " + path);
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Result<int> OpenRegularFile(const std::string& path, std::string_view what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  const std::string opening =
      what.empty() ? "opening " + path : fmt::format("opening {} {}", what, path);
  if (fd < 0) return ErrnoError(errno, opening);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int error = errno;
    ::close(fd);
    return ErrnoError(error, opening);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    std::string_view type = S_ISDIR(st.st_mode)    ? "a directory"
                            : S_ISFIFO(st.st_mode) ? "a FIFO"
                            : S_ISCHR(st.st_mode)  ? "a character device"
                            : S_ISBLK(st.st_mode)  ? "a block device"
                            : S_ISSOCK(st.st_mode) ? "a socket"
                                                   : "not a plain file";
    return InvalidArgumentError(fmt::format("{} is not a regular file ({}): expected a {} file",
                                            path, type, what.empty() ? "regular" : what));
  }
  // Regular files never block; clear the flag so that reads behave as usual anyway.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

FileReader::FileReader(std::string path, size_t max_bytes)
    : path_(std::move(path)), max_bytes_(max_bytes) {}

FileReader::~FileReader() {
  if (fd_ >= 0) close(fd_);
}

Result<std::string_view> FileReader::Read() {
  if (fd_ < 0) {
    TITAN_ASSIGN_OR_RETURN(fd_, OpenRegularFile(path_, ""));
  }
  if (buffer_.size() < 4096) buffer_.resize(4096);
  size_t used = 0;
  for (;;) {
    if (used == buffer_.size()) {
      if (buffer_.size() > max_bytes_) {
        return OutOfRangeError(path_ + " is larger than " + std::to_string(max_bytes_) + " bytes");
      }
      buffer_.resize(std::min(buffer_.size() * 2, max_bytes_ + 1));
    }
    const ssize_t n =
        pread(fd_, buffer_.data() + used, buffer_.size() - used, static_cast<off_t>(used));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      close(fd_);
      fd_ = -1;
      // A vanished process makes its /proc files fail with ESRCH.
      return ErrnoError(saved == ESRCH ? ENOENT : saved, "reading " + path_);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  if (used > max_bytes_) {
    return OutOfRangeError(path_ + " is larger than " + std::to_string(max_bytes_) + " bytes");
  }
  return std::string_view(buffer_.data(), used);
}

}  // namespace titan
