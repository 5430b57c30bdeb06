// Copies one committed checkpoint from one root to another (a directory to s3://, back, or
// between buckets), checking every chunk's XXH3 on the way: `titan ckpt cp`.
//
// The copy commits like a save: data files first, then MANIFEST (the source's bytes, verbatim),
// then `latest` if the step is newer than the destination's latest. A crash or an error leaves
// the destination's earlier checkpoints untouched and the copied one uncommitted. Data files
// the destination already holds at the right size (chunks an incremental checkpoint shares with
// an older one) are not copied again.
//
// Parallelism: `files_in_parallel` files at once; within a file, `read_ahead` chunks are read
// concurrently (ranged GETs on object storage) and appended in order (an object store's writer
// uploads parts in parallel itself). Memory: about files_in_parallel * read_ahead chunks,
// plus what the destination's writers buffer (s3_storage.h).
// Thread safety: one call per destination root at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "src/base/status.h"
#include "src/checkpoint/manifest.h"
#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

struct CopyOptions {
  int files_in_parallel = 4;
  int read_ahead = 4;
  // Called after each file with the bytes copied so far (from the copying threads, serialised).
  std::function<void(uint64_t copied_bytes, uint64_t total_bytes)> on_progress;
  // Polled before each chunk is read (from the copying threads); true stops the copy with
  // CANCELLED, committing nothing. Must be thread-safe and cheap.
  std::function<bool()> cancelled;
  // Writes data files through the destination's buffered writer (Storage::NewWritableFile)
  // instead of its bulk writer (NewBulkFile: O_DIRECT on a POSIX file system). For a
  // destination that is read right after (a prefetch): its data then stays in the page cache.
  // Only for POSIX destinations (an object store's buffered writer holds a whole file).
  bool cache_destination = false;
};

struct CopyReport {
  int files_copied = 0;
  int files_present = 0;  // already at the destination
  uint64_t copied_bytes = 0;
  bool moved_latest = false;
};

// Copies the data files of `manifest` (a committed checkpoint's or one rank's done marker) that
// `select` picks (all without it) and `to` does not already hold at the size the manifest
// needs, every chunk checked, each file's directory synced; commits nothing. CopyCheckpoint is
// this and the commit; a rank whose checkpoint directory is node-local uploads its own data
// file with it, and a node's prefetch fetches its ranks' files. Errors as CopyCheckpoint's.
Result<CopyReport> CopyDataFiles(Storage& from, const Manifest& manifest, Storage& to,
                                 const CopyOptions& options = {},
                                 const std::function<bool(const std::string& path)>& select = {});

// Lowers the calling thread's CPU priority (nice 10) for a copy in the background, so that it
// yields the CPU to training and to the next save's staging copy; threads it starts afterwards
// (ranged reads, part uploads) inherit it. Best effort: a failure is logged at debug level.
void LowerThreadPriorityForCopy();

// DATA_LOSS when a chunk's bytes do not match the manifest (naming file and offset); CANCELLED
// when options.cancelled said so; the source's and the destination's errors otherwise,
// prefixed with the file being copied.
Result<CopyReport> CopyCheckpoint(Storage& from, int64_t step, Storage& to,
                                  const CopyOptions& options = {});

}  // namespace titan::checkpoint
