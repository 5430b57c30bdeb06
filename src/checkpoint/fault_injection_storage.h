// FaultInjectionStorage (test only, after LevelDB's FaultInjectionTestEnv): wraps a real
// Storage and remembers what is not yet durable, so a test can "crash" the process at any point
// and see what a real power loss could leave behind:
//   * bytes appended since a file's last Sync() are lost (the file is truncated);
//   * names created, renamed or removed since their directory's last SyncDir() revert
//     (a new file disappears, a rename is undone, restoring an overwritten target).
// FailAfter(n) makes every operation after the next n fail with UNAVAILABLE, as if the process
// had died there; the test then calls SimulateCrash() and inspects the directory.
// Thread safety: all methods are serialised by one mutex.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

class FaultInjectionStorage final : public Storage {
 public:
  explicit FaultInjectionStorage(std::shared_ptr<Storage> base) : base_(std::move(base)) {}

  // Operations after the next `n` fail (n < 0: never).
  void FailAfter(int64_t n);
  // Number of mutating operations performed so far.
  int64_t operations() const;
  // Drops everything not durable (see above). Call after the writers stopped.
  Status SimulateCrash();

  std::string Describe(std::string_view path) const override { return base_->Describe(path); }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override {
    return base_->NewRandomAccessFile(path);
  }
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    return base_->ReadFile(path, max_bytes);
  }
  Status WriteFileAtomic(const std::string& path, std::string_view data) override;
  Status CreateDir(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status RemoveFile(const std::string& path) override;
  Status RemoveDir(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    return base_->ListDir(path);
  }
  Result<uint64_t> FileSize(const std::string& path) override { return base_->FileSize(path); }
  bool IsDir(const std::string& path) override { return base_->IsDir(path); }
  EntryKind KindOf(const std::string& path) override { return base_->KindOf(path); }

  // Called by the files it hands out.
  Status Tick();  // counts one operation; fails once the budget is spent
  void RecordSynced(const std::string& path, uint64_t size_bytes);

 private:
  // A directory entry change not yet made durable by SyncDir of its directory.
  struct PendingName {
    std::string path;
    bool existed = false;  // before the change
    bool was_dir = false;
    std::string content;  // the file's content before the change
  };
  Status RemoveTree(const std::string& path);
  static std::string DirOf(const std::string& path);
  void RememberName(const std::string& path);  // requires mu_

  std::shared_ptr<Storage> base_;
  mutable std::mutex mu_;
  int64_t budget_ = -1;
  int64_t operations_ = 0;
  std::map<std::string, uint64_t> synced_size_;  // files written through us
  std::vector<PendingName> pending_;
};

}  // namespace titan::checkpoint
