// Storage on a POSIX file system: open/write/pwrite/fsync/rename.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>

#include <fmt/format.h>

#include "src/base/env.h"
#include "src/checkpoint/direct_writable_file.h"
#include "src/checkpoint/posix_error.h"
#include "src/checkpoint/storage.h"

namespace titan::checkpoint {
namespace {

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string full_path) : fd_(fd), full_path_(std::move(full_path)) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Append(const void* data, size_t size_bytes) override {
    const char* p = static_cast<const char*>(data);
    while (size_bytes > 0) {
      ssize_t n = ::write(fd_, p, std::min<size_t>(size_bytes, 1 << 30));
      if (n < 0) {
        if (errno == EINTR) continue;
        return PathError(errno, fmt::format("write at byte {} of", size_), full_path_);
      }
      p += n;
      size_bytes -= static_cast<size_t>(n);
      size_ += static_cast<uint64_t>(n);
    }
    // Start write-back of what is complete so far, so that the disk works while we keep
    // hashing and copying, and the final fsync has little left to do (dd-like streaming).
    if (size_ - flushed_ >= kWritebackBytes) {
      ::sync_file_range(fd_, static_cast<off_t>(flushed_), static_cast<off_t>(size_ - flushed_),
                        SYNC_FILE_RANGE_WRITE);
      flushed_ = size_;
    }
    return OkStatus();
  }
  Status Sync() override {
    if (::fdatasync(fd_) != 0) return PathError(errno, "fsync", full_path_);
    return OkStatus();
  }
  Status Close() override {
    if (fd_ < 0) return OkStatus();
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return PathError(errno, "close", full_path_);
    return OkStatus();
  }
  uint64_t size_bytes() const override { return size_; }

 private:
  static constexpr uint64_t kWritebackBytes = uint64_t{32} << 20;
  int fd_;
  std::string full_path_;
  uint64_t size_ = 0;
  uint64_t flushed_ = 0;
};

// Opens `full` for reading through OpenRegularFile (src/base/env.h: O_NONBLOCK, then fstat), so
// that a FIFO or device in a checkpoint directory (titan never writes one) cannot block the
// reader; anything but a regular file is FAILED_PRECONDITION naming it, which a load reports
// and load_latest falls back from.
Result<int> OpenForReading(const std::string& full) {
  Result<int> fd = OpenRegularFile(full, "checkpoint");
  if (fd.ok() || fd.status().code() != StatusCode::kInvalidArgument) return fd;
  return FailedPreconditionError(std::string(fd.status().message()));
}

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(int fd, std::string full_path)
      : fd_(fd), full_path_(std::move(full_path)) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }
  Status ReadAt(uint64_t offset, size_t size_bytes, void* dst) const override {
    char* p = static_cast<char*>(dst);
    uint64_t at = offset;
    while (size_bytes > 0) {
      ssize_t n = ::pread(fd_, p, std::min<size_t>(size_bytes, 1 << 30), static_cast<off_t>(at));
      if (n < 0) {
        if (errno == EINTR) continue;
        return PathError(errno, fmt::format("read at byte {} of", at), full_path_);
      }
      if (n == 0) {
        return DataLossError(fmt::format(
            "{} ends before byte {} (wanted {} bytes at offset {}): the file is truncated",
            full_path_, at, size_bytes + (at - offset), offset));
      }
      p += n;
      at += static_cast<uint64_t>(n);
      size_bytes -= static_cast<size_t>(n);
    }
    return OkStatus();
  }

 private:
  int fd_;
  std::string full_path_;
};

class PosixStorage final : public Storage {
 public:
  explicit PosixStorage(std::string root) : root_(std::move(root)) {}

  std::string Describe(std::string_view path) const override { return Full(path); }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    std::string full = Full(path);
    int fd = ::open(full.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return PathError(errno, "create", full);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(fd, full));
  }

  Result<std::unique_ptr<WritableFile>> NewBulkFile(const std::string& path) override {
    TITAN_ASSIGN_OR_RETURN(auto direct, OpenDirectWritableFile(Full(path)));
    if (direct) return direct;
    return NewWritableFile(path);  // the file system does not do O_DIRECT
  }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    std::string full = Full(path);
    TITAN_ASSIGN_OR_RETURN(const int fd, OpenForReading(full));
    return std::unique_ptr<RandomAccessFile>(new PosixRandomAccessFile(fd, full));
  }

  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    std::string full = Full(path);
    TITAN_ASSIGN_OR_RETURN(const int fd, OpenForReading(full));
    std::string out;
    char buffer[1 << 16];
    while (true) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0) {
        if (errno == EINTR) continue;
        int err = errno;
        ::close(fd);
        return PathError(err, "read", full);
      }
      if (n == 0) break;
      if (out.size() + static_cast<size_t>(n) > max_bytes) {
        ::close(fd);
        return OutOfRangeError(
            fmt::format("{} is larger than the limit of {} bytes", full, max_bytes));
      }
      out.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  }

  Status WriteFileAtomic(const std::string& path, std::string_view data) override {
    return WriteThroughTemporary(path, data, [&](const std::string& tmp) -> Status {
      TITAN_RETURN_IF_ERROR(Rename(tmp, path));
      return SyncDir(DirName(path));
    });
  }

  Status CreateFileExclusive(const std::string& path, std::string_view data) override {
    return WriteThroughTemporary(path, data, [&](const std::string& tmp) -> Status {
      // link() fails with EEXIST instead of replacing: the one atomic create-if-absent of a
      // whole file that NFS has too.
      if (::link(Full(tmp).c_str(), Full(path).c_str()) != 0) {
        if (errno == EEXIST)
          return AlreadyExistsError(fmt::format("{} already exists", Full(path)));
        return PathError(errno, fmt::format("link {} to", Full(tmp)), Full(path));
      }
      TITAN_RETURN_IF_ERROR(RemoveFile(tmp));
      return SyncDir(DirName(path));
    });
  }

  Status CreateDir(const std::string& path) override {
    std::string full = Full(path);
    for (size_t pos = root_.size() + 1; pos <= full.size(); ++pos) {
      if (pos != full.size() && full[pos] != '/') continue;
      std::string prefix = full.substr(0, pos);
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return PathError(errno, "mkdir", prefix);
      }
    }
    return OkStatus();
  }

  Status SyncDir(const std::string& path) override {
    std::string full = Full(path);
    int fd = ::open(full.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PathError(errno, "open directory", full);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0 && err != EINVAL) return PathError(err, "fsync directory", full);
    return OkStatus();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(Full(from).c_str(), Full(to).c_str()) != 0) {
      return PathError(errno, fmt::format("rename {} to", Full(from)), Full(to));
    }
    return OkStatus();
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(Full(path).c_str()) != 0 && errno != ENOENT) {
      return PathError(errno, "remove", Full(path));
    }
    return OkStatus();
  }

  Status RemoveDir(const std::string& path) override {
    if (::rmdir(Full(path).c_str()) != 0 && errno != ENOENT) {
      return PathError(errno, "remove directory", Full(path));
    }
    return OkStatus();
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    std::string full = Full(path);
    DIR* dir = ::opendir(full.c_str());
    if (dir == nullptr) return PathError(errno, "list", full);
    std::vector<std::string> names;
    while (dirent* entry = ::readdir(dir)) {
      std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      names.emplace_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(Full(path).c_str(), &st) != 0) return PathError(errno, "stat", Full(path));
    return static_cast<uint64_t>(st.st_size);
  }

  bool IsDir(const std::string& path) override {
    struct stat st;
    return ::stat(Full(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  EntryKind KindOf(const std::string& path) override {
    struct stat st;
    if (::lstat(Full(path).c_str(), &st) != 0) return EntryKind::kMissing;
    if (S_ISREG(st.st_mode)) return EntryKind::kFile;
    return S_ISDIR(st.st_mode) ? EntryKind::kDirectory : EntryKind::kOther;
  }

 private:
  // Writes `data` to a fresh temporary name beside `path` and syncs it, then calls `place`
  // with that name; the temporary file is removed unless `place` renamed it away.
  template <typename Place>
  Status WriteThroughTemporary(const std::string& path, std::string_view data, Place place) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string tmp = fmt::format("{}.tmp-{:x}", path, rng() & 0xffffffffu);
    Status status = [&]() -> Status {
      TITAN_ASSIGN_OR_RETURN(auto file, NewWritableFile(tmp));
      TITAN_RETURN_IF_ERROR(file->Append(data.data(), data.size()));
      TITAN_RETURN_IF_ERROR(file->Sync());
      TITAN_RETURN_IF_ERROR(file->Close());
      return place(tmp);
    }();
    if (!status.ok()) RemoveFile(tmp).IgnoreError();
    return status;
  }

  std::string Full(std::string_view path) const {
    if (path.empty() || path == ".") return root_;
    return fmt::format("{}/{}", root_, path);
  }
  static std::string DirName(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
  }
  std::string root_;
};

}  // namespace

Result<std::shared_ptr<Storage>> OpenPosixStorage(const std::string& root, bool create_if_missing) {
  std::string clean = root;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  if (clean.empty()) return InvalidArgumentError("checkpoint directory is empty");
  auto storage = std::make_shared<PosixStorage>(clean);
  if (!create_if_missing) {
    if (!storage->IsDir("")) {
      struct stat st;
      if (::stat(clean.c_str(), &st) == 0) {
        return InvalidArgumentError(fmt::format(
            "{} is a file, not a checkpoint directory (give DIR or DIR/step_NNNNNNNNNN)", clean));
      }
      return NotFoundError(fmt::format("checkpoint directory {} does not exist", clean));
    }
    return std::shared_ptr<Storage>(storage);
  }
  // Create the root itself (mkdir -p of each component).
  for (size_t pos = 1; pos <= clean.size(); ++pos) {
    if (pos != clean.size() && clean[pos] != '/') continue;
    std::string prefix = clean.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return PathError(errno, "mkdir", prefix);
    }
  }
  return std::shared_ptr<Storage>(storage);
}

}  // namespace titan::checkpoint
