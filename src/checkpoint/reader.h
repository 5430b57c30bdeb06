// CheckpointReader: reads tensors (or any slice of them) out of a committed checkpoint, whatever
// world size and sharding it was saved with. It reads only the chunks that overlap the requested
// slice (chunks are at most a few MiB, see SaveOptions::chunk_bytes) and verifies the XXH3-128
// checksum of every chunk it reads; a mismatch is DATA_LOSS naming the checkpoint, the data
// file, the tensor and the byte offset. When a chunk lies entirely inside the destination it is
// read straight into the caller's memory (no extra copy).
//
// Thread safety: ReadSlice and VerifyAll may be called concurrently from several threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/checkpoint/manifest.h"
#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

class CheckpointReader {
 public:
  // Opens step_N of `storage` (reads and validates its MANIFEST).
  static Result<std::unique_ptr<CheckpointReader>> Open(std::shared_ptr<Storage> storage,
                                                        int64_t step);
  // Wraps an already parsed manifest (e.g. for tests and tools).
  CheckpointReader(std::shared_ptr<Storage> storage, Manifest manifest);

  const Manifest& manifest() const { return manifest_; }
  // nullptr if the checkpoint has no such tensor.
  const TensorEntry* FindTensor(const std::string& name) const;

  // Reads the slice [offsets, offsets + lengths) of tensor `name` into `dst`, row-major and
  // contiguous, of exactly dst_bytes = prod(lengths) * dtype size. Errors: NOT_FOUND (no such
  // tensor), INVALID_ARGUMENT (slice outside the shape, wrong size), DATA_LOSS (checksum, short
  // file, or the checkpoint's shards do not cover the slice).
  Status ReadSlice(const std::string& name, const std::vector<int64_t>& offsets,
                   const std::vector<int64_t>& lengths, void* dst, size_t dst_bytes);
  // Reads a whole tensor.
  Status ReadTensor(const std::string& name, void* dst, size_t dst_bytes);

  struct VerifyReport {
    uint64_t chunks = 0;
    uint64_t bytes = 0;
    std::vector<Status> errors;  // one per bad chunk or unreadable file
  };
  // Reads every chunk of every tensor and checks its checksum; does not stop at the first error.
  VerifyReport VerifyAll();

  uint64_t bytes_read() const { return bytes_read_.load(); }

 private:
  Result<const RandomAccessFile*> File(uint32_t index);
  // Reads chunk `c` of `tensor` (located at `shard_byte` within its shard) into dst, verified.
  Status ReadChunk(const TensorEntry& tensor, const ChunkRef& c, uint64_t shard_byte, void* dst);

  std::shared_ptr<Storage> storage_;
  Manifest manifest_;
  std::string where_;  // "checkpoint <root>/step_N"
  std::mutex files_mu_;
  std::vector<std::unique_ptr<RandomAccessFile>> files_;  // by manifest file index
  std::atomic<uint64_t> bytes_read_{0};
};

}  // namespace titan::checkpoint
