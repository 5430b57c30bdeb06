// Copies many (possibly uneven) byte ranges with a few threads: the async save's staging copy,
// which is the whole of the time a training step is blocked by an asynchronous checkpoint.
// The ranges are cut into equal shares of the total bytes, so one huge tensor is split too.
// Thread safety: the ranges must not overlap each other; the call returns when all are copied.
#pragma once

#include <cstddef>
#include <vector>

namespace titan::checkpoint {

struct CopySpan {
  char* dst;
  const char* src;
  size_t size_bytes;
};

// Uses up to `max_threads` threads (the caller's included); small totals are copied inline.
void ParallelCopy(const std::vector<CopySpan>& spans, size_t max_threads);

}  // namespace titan::checkpoint
