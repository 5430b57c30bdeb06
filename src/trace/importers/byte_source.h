// Streaming byte sources for trace files: a plain file, or a gzip file (one or more members)
// inflated with zlib as it is read. Nothing holds the whole file: a source hands out the
// uncompressed bytes in pieces, so memory stays flat however large the trace is.
// Errors name the file and say what to do; corrupt and truncated gzip are DATA_LOSS.
// Thread safety: a source is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "src/base/env.h"  // OpenRegularFile
#include "src/base/status.h"

namespace titan::trace {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `n` uncompressed bytes into `buf`; 0 means end of input.
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
  // Bytes of the file consumed so far (compressed bytes for gzip).
  virtual uint64_t file_offset() const = 0;
  virtual bool gzipped() const = 0;
};

// Opens `path` (OpenRegularFile); gzip is recognised by its magic bytes, not by the file name.
Result<std::unique_ptr<ByteSource>> OpenTraceFile(const std::string& path);

// A source over bytes in memory (tests and fuzzers); gzip detected by magic bytes as well.
// `data` must outlive the source.
std::unique_ptr<ByteSource> MemorySource(std::string_view data, std::string name);

}  // namespace titan::trace
