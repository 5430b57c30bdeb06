// A WritableFile for large checkpoint data on a POSIX file system: it bypasses the page cache
// (O_DIRECT) and overlaps the caller's work with the disk's.
//
// Append() copies into one of a few page-aligned bounce buffers; a full buffer goes to a
// background thread that pwrite()s it at its offset while the caller fills the next one, so
// hashing and copying on the caller's thread run while the device writes (the throughput is
// the slower of the two, not their sum). The page cache is neither filled nor flushed: a
// checkpoint does not evict the training data's pages and Sync() has no backlog of dirty pages.
//
// Alignment: O_DIRECT needs block-aligned offsets, sizes and buffers; every write here is a
// whole number of kDirectAlignment blocks at an aligned offset. A tail that does not fill its
// last block is padded with zeros, written, and cut back to the real size with ftruncate before
// fdatasync. A Sync() in the middle of a file keeps that partial block in its buffer, and the
// next write of it starts at the same aligned offset, so appends may continue after a Sync().
//
// Fallback: a file system that refuses O_DIRECT at open (EINVAL) gets a buffered file (Open
// returns nullptr and the caller uses its buffered writer); one that refuses it at the first
// write gets O_DIRECT cleared with fcntl() and the same writes buffered.
//
// Errors: the first write error (ENOSPC as RESOURCE_EXHAUSTED, naming the path and offset) is
// returned by the next Append/Sync/Close; nothing is written after it.
// Thread safety: like every WritableFile, one caller thread; the background thread is internal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "src/base/status.h"
#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

inline constexpr size_t kDirectAlignment = 4096;

struct DirectFileOptions {
  size_t buffer_bytes = size_t{8} << 20;  // per buffer; a multiple of kDirectAlignment
  size_t buffers = 4;                     // at most buffers - 1 writes queued behind the caller
};

// Creates (truncating) `full_path` for direct writing. Returns nullptr (not an error) when the
// file system does not support O_DIRECT; other open errors name the path.
Result<std::unique_ptr<WritableFile>> OpenDirectWritableFile(const std::string& full_path,
                                                             DirectFileOptions options = {});

}  // namespace titan::checkpoint
