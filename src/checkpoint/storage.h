// Storage: where checkpoints live. Every path is relative to the storage's root and uses '/'
// separators ("step_0000000100/rank_00000-1a2b.data"). The checkpoint engine uses only these
// operations, so the object-store backend (s3_storage.h) implements them too (a directory is a
// key prefix; WriteFileAtomic is one PUT; SyncDir is a no-op there).
//
// Durability contract (what the commit protocol relies on):
//   * data appended to a WritableFile is durable only after Sync() returned OK;
//   * a created, removed or renamed name is durable only after SyncDir() of its directory;
//   * Rename() atomically replaces an existing target.
// Errors name the path and the operation; ENOSPC maps to RESOURCE_EXHAUSTED.
// Thread safety: implementations must allow concurrent calls on different paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "src/base/status.h"

namespace titan::checkpoint {

// A file being written sequentially. Not thread-safe. Destroying it without Close() closes it.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status Append(const void* data, size_t size_bytes) = 0;
  virtual Status Sync() = 0;  // fsync: the appended bytes are durable
  virtual Status Close() = 0;
  // Bytes appended so far.
  virtual uint64_t size_bytes() const = 0;
};

// A file opened for positional reads. Thread-safe (pread).
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads exactly `size_bytes` at `offset` into `dst`; a short file is DATA_LOSS naming the path.
  virtual Status ReadAt(uint64_t offset, size_t size_bytes, void* dst) const = 0;
};

class Storage {
 public:
  virtual ~Storage() = default;

  // A human-readable location, used in error messages ("/ckpt" or "s3://b/prefix").
  virtual std::string Describe(std::string_view path) const = 0;

  // Creates (truncating) `path`; its directory must exist.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Creates (truncating) a large data file that is written once in big appends (checkpoint
  // data). The backend may bypass the page cache and write in the background (POSIX: O_DIRECT
  // through aligned buffers); the durability contract is the same. Default: NewWritableFile.
  virtual Result<std::unique_ptr<WritableFile>> NewBulkFile(const std::string& path) {
    return NewWritableFile(path);
  }
  virtual Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) = 0;
  // Whole small file of at most max_bytes (more: OUT_OF_RANGE). Missing: NOT_FOUND.
  virtual Result<std::string> ReadFile(const std::string& path, size_t max_bytes) = 0;
  // Writes `data` to `path` so that a crash leaves either the old content or the new one:
  // write to a temporary name, fsync, rename over `path`, fsync the directory.
  virtual Status WriteFileAtomic(const std::string& path, std::string_view data) = 0;
  // WriteFileAtomic that only creates: ALREADY_EXISTS, changing nothing, when `path` exists.
  // The commit point of a checkpoint (its MANIFEST), so that two writers of one step cannot
  // both succeed (commit.h). POSIX: the temporary file is link()ed to `path` (atomic, also on
  // NFS); S3: a PUT with If-None-Match: * where the store honours it. Default (decorators in
  // tests): a size check, then WriteFileAtomic, which is not atomic against another writer.
  virtual Status CreateFileExclusive(const std::string& path, std::string_view data) {
    if (FileSize(path).ok()) return AlreadyExistsError(Describe(path) + " already exists");
    return WriteFileAtomic(path, data);
  }

  virtual Status CreateDir(const std::string& path) = 0;  // like mkdir -p; existing is OK
  virtual Status SyncDir(const std::string& path) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;  // missing is OK
  virtual Status RemoveDir(const std::string& path) = 0;   // must be empty; missing is OK
  // Sorted names in `path` (no "." / ".."). Missing directory: NOT_FOUND.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // Size of a file; NOT_FOUND if it does not exist.
  virtual Result<uint64_t> FileSize(const std::string& path) = 0;
  virtual bool IsDir(const std::string& path) = 0;

  // What `path` is, without following a symbolic link (a link is kOther). gc removes only
  // regular files and descends only into real directories, so that a link or a stray
  // directory in a checkpoint directory cannot make it remove files elsewhere or fail for good.
  // Default (object stores, which have neither): kFile when FileSize finds it, else kDirectory
  // when IsDir does, else kMissing.
  enum class EntryKind { kMissing, kFile, kDirectory, kOther };
  virtual EntryKind KindOf(const std::string& path) {
    if (FileSize(path).ok()) return EntryKind::kFile;
    return IsDir(path) ? EntryKind::kDirectory : EntryKind::kMissing;
  }

  // Writes an interrupted process left behind that ListDir does not show (an object store's
  // incomplete multipart uploads: invisible, but stored and billed), as paths under the root,
  // and their removal. A file system has none (a partial file is an ordinary file there).
  virtual Result<std::vector<std::string>> ListIncompleteWrites() {
    return std::vector<std::string>();
  }
  virtual Status AbortIncompleteWrites(const std::string& path) { return OkStatus(); }
};

// POSIX file systems (local, NFS, Lustre) rooted at `root`. With create_if_missing the root is
// created (mkdir -p); without, a missing root is NOT_FOUND.
Result<std::shared_ptr<Storage>> OpenPosixStorage(const std::string& root,
                                                  bool create_if_missing = true);

// A checkpoint location as users write it: "s3://bucket/prefix" (OpenS3Storage, s3_storage.h;
// create_if_missing does not create buckets) or a directory (OpenPosixStorage).
Result<std::shared_ptr<Storage>> OpenStorage(const std::string& location,
                                             bool create_if_missing = true);

}  // namespace titan::checkpoint
