// Chunk checksums: XXH3-128 of a chunk's bytes, computed with libxxhash's runtime CPU dispatch
// (AVX2/AVX-512 where the CPU has them; Debian builds the plain entry points for baseline
// x86-64 SSE2, about half as fast). The one-shot and the streaming forms give the same value for
// the same bytes, so a chunk may be hashed piece by piece while it is hot in the cache (the
// reader and the writer do this) and checked against a hash computed in one go.
// Thread safety: HashBytes is pure; a ChunkHasher is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace titan::checkpoint {

// XXH3-128 of a chunk's bytes; printed as 32 lowercase hex digits (high then low).
struct Hash128 {
  uint64_t high = 0;
  uint64_t low = 0;
  bool operator==(const Hash128&) const = default;
};

Hash128 HashBytes(const void* data, size_t size_bytes);
std::string HashToHex(const Hash128& hash);
bool HashFromHex(std::string_view hex, Hash128* out);

// Streaming XXH3-128: Update() with consecutive pieces, then Digest(). Reset() starts over.
class ChunkHasher {
 public:
  ChunkHasher();
  ~ChunkHasher();
  ChunkHasher(const ChunkHasher&) = delete;
  ChunkHasher& operator=(const ChunkHasher&) = delete;

  void Reset();
  void Update(const void* data, size_t size_bytes);
  Hash128 Digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace titan::checkpoint
