#include "src/checkpoint/parallel_copy.h"

#include <algorithm>
#include <cstring>
#include <thread>

namespace titan::checkpoint {
namespace {

// Below this, starting threads costs more than it saves.
constexpr size_t kBytesPerThread = size_t{32} << 20;

// Copies the bytes [from, to) of the concatenation of `spans`.
void CopyShare(const std::vector<CopySpan>& spans, size_t from, size_t to) {
  size_t base = 0;
  for (const CopySpan& s : spans) {
    const size_t lo = std::max(from, base), hi = std::min(to, base + s.size_bytes);
    if (lo < hi) std::memcpy(s.dst + (lo - base), s.src + (lo - base), hi - lo);
    base += s.size_bytes;
    if (base >= to) break;
  }
}

}  // namespace

void ParallelCopy(const std::vector<CopySpan>& spans, size_t max_threads) {
  size_t total = 0;
  for (const CopySpan& s : spans) total += s.size_bytes;
  const size_t threads =
      std::clamp<size_t>(total / kBytesPerThread, 1, std::max<size_t>(max_threads, 1));
  const size_t share = (total + threads - 1) / threads;
  std::vector<std::thread> helpers;
  for (size_t i = 1; i < threads; ++i) {
    helpers.emplace_back(CopyShare, std::cref(spans), i * share, std::min(total, (i + 1) * share));
  }
  CopyShare(spans, 0, std::min(total, share));
  for (std::thread& t : helpers) t.join();
}

}  // namespace titan::checkpoint
