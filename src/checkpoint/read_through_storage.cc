#include "src/checkpoint/read_through_storage.h"

namespace titan::checkpoint {

Result<std::unique_ptr<RandomAccessFile>> ReadThroughStorage::NewRandomAccessFile(
    const std::string& path) {
  Result<uint64_t> cached = cache_->FileSize(path);
  if (cached.ok()) {
    Result<uint64_t> stored = store_->FileSize(path);
    if (stored.ok() && *stored == *cached) {
      Result<std::unique_ptr<RandomAccessFile>> file = cache_->NewRandomAccessFile(path);
      if (file.ok()) {
        from_cache_.fetch_add(1);
        return file;
      }
    }
  }
  from_store_.fetch_add(1);
  return store_->NewRandomAccessFile(path);
}

}  // namespace titan::checkpoint
