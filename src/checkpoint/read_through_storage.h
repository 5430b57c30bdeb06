// ReadThroughStorage: a checkpoint store read with a node-local cache in front of it. Every
// operation is the store's (MANIFEST, "latest", listings, sizes, writes), except opening a
// data file for reading: when the cache holds that file at the store's size, it is read from
// the cache (a node-local checkpoint directory: the files this node's ranks saved, or what
// titan run's prefetch fetched). The reader checks every chunk's XXH3 whichever side it comes
// from, so a damaged cache is DATA_LOSS, never wrong data; titan.checkpoint then loads from
// the store alone.
//
// Thread safety: as the two storages; the counters are atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

class ReadThroughStorage final : public Storage {
 public:
  ReadThroughStorage(std::shared_ptr<Storage> store, std::shared_ptr<Storage> cache)
      : store_(std::move(store)), cache_(std::move(cache)) {}

  // Data files opened from the cache / from the store so far.
  uint64_t files_from_cache() const { return from_cache_.load(); }
  uint64_t files_from_store() const { return from_store_.load(); }

  Result<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(const std::string& path) override;

  std::string Describe(std::string_view path) const override { return store_->Describe(path); }
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return store_->NewWritableFile(path);
  }
  Result<std::unique_ptr<WritableFile>> NewBulkFile(const std::string& path) override {
    return store_->NewBulkFile(path);
  }
  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) override {
    return store_->ReadFile(path, max_bytes);
  }
  Status WriteFileAtomic(const std::string& path, std::string_view data) override {
    return store_->WriteFileAtomic(path, data);
  }
  Status CreateFileExclusive(const std::string& path, std::string_view data) override {
    return store_->CreateFileExclusive(path, data);
  }
  Status CreateDir(const std::string& path) override { return store_->CreateDir(path); }
  Status SyncDir(const std::string& path) override { return store_->SyncDir(path); }
  Status Rename(const std::string& from, const std::string& to) override {
    return store_->Rename(from, to);
  }
  Status RemoveFile(const std::string& path) override { return store_->RemoveFile(path); }
  Status RemoveDir(const std::string& path) override { return store_->RemoveDir(path); }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    return store_->ListDir(path);
  }
  Result<uint64_t> FileSize(const std::string& path) override { return store_->FileSize(path); }
  bool IsDir(const std::string& path) override { return store_->IsDir(path); }
  EntryKind KindOf(const std::string& path) override { return store_->KindOf(path); }

 private:
  const std::shared_ptr<Storage> store_;
  const std::shared_ptr<Storage> cache_;
  std::atomic<uint64_t> from_cache_{0};
  std::atomic<uint64_t> from_store_{0};
};

}  // namespace titan::checkpoint
