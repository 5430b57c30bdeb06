#include "src/checkpoint/hash.h"

// XXH3_state_t is complete only with static linking on (it is a plain struct in the ABI).
#define XXH_STATIC_LINKING_ONLY
#include <xxh_x86dispatch.h>
#include <xxhash.h>

#include <fmt/format.h>

namespace titan::checkpoint {

Hash128 HashBytes(const void* data, size_t size_bytes) {
  XXH128_hash_t h = XXH3_128bits_dispatch(data, size_bytes);
  return Hash128{h.high64, h.low64};
}

std::string HashToHex(const Hash128& hash) {
  return fmt::format("{:016x}{:016x}", hash.high, hash.low);
}

bool HashFromHex(std::string_view hex, Hash128* out) {
  if (hex.size() != 32) return false;
  uint64_t parts[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    char c = hex[i];
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else {
      return false;
    }
    parts[i / 16] = (parts[i / 16] << 4) | static_cast<uint64_t>(v);
  }
  *out = Hash128{parts[0], parts[1]};
  return true;
}

struct ChunkHasher::State {
  XXH3_state_t xxh;
};

ChunkHasher::ChunkHasher() : state_(std::make_unique<State>()) { Reset(); }
ChunkHasher::~ChunkHasher() = default;

void ChunkHasher::Reset() { XXH3_128bits_reset(&state_->xxh); }

void ChunkHasher::Update(const void* data, size_t size_bytes) {
  XXH3_128bits_update_dispatch(&state_->xxh, data, size_bytes);
}

Hash128 ChunkHasher::Digest() const {
  XXH128_hash_t h = XXH3_128bits_digest(&state_->xxh);
  return Hash128{h.high64, h.low64};
}

}  // namespace titan::checkpoint
