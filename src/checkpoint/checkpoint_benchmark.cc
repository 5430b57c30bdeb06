// The checkpoint engine's inner loops, side by side with what the alternatives spend per byte:
//   * chunk checksum: titan's XXH3-128 with runtime CPU dispatch vs the same hash through
//     Debian's baseline (SSE2) entry point vs zlib's CRC-32, which torch.save computes for every
//     record of its zip file;
//   * staging copy (the whole blocking part of an async save): ParallelCopy vs one memcpy.
// Bytes/s are reported per call; compare ratios within one run.
#include <zlib.h>

#include <cstring>
#include <vector>

#include <benchmark/benchmark.h>
#include <xxhash.h>

#include "src/checkpoint/hash.h"
#include "src/checkpoint/parallel_copy.h"

namespace titan::checkpoint {
namespace {

constexpr size_t kChunk = size_t{8} << 20;  // the default chunk size

const std::vector<char>& Data() {
  static std::vector<char> data = [] {
    std::vector<char> d(size_t{256} << 20);
    for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<char>(i * 2654435761u >> 13);
    return d;
  }();
  return data;
}

void BM_HashDispatch(benchmark::State& state) {
  const std::vector<char>& d = Data();
  for (auto _ : state) benchmark::DoNotOptimize(HashBytes(d.data(), kChunk));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kChunk));
}
BENCHMARK(BM_HashDispatch);

void BM_HashBaseline(benchmark::State& state) {
  const std::vector<char>& d = Data();
  for (auto _ : state) benchmark::DoNotOptimize(XXH3_128bits(d.data(), kChunk));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kChunk));
}
BENCHMARK(BM_HashBaseline);

void BM_HashStreaming(benchmark::State& state) {
  const std::vector<char>& d = Data();
  ChunkHasher hasher;
  for (auto _ : state) {
    hasher.Reset();
    for (size_t at = 0; at < kChunk; at += 512 << 10) hasher.Update(d.data() + at, 512 << 10);
    benchmark::DoNotOptimize(hasher.Digest());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kChunk));
}
BENCHMARK(BM_HashStreaming);

void BM_Crc32Zlib(benchmark::State& state) {
  const std::vector<char>& d = Data();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        crc32(0, reinterpret_cast<const Bytef*>(d.data()), static_cast<uInt>(kChunk)));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kChunk));
}
BENCHMARK(BM_Crc32Zlib);

// 256 MiB of 32 MiB tensors into a reused staging buffer.
void BM_StagingCopy(benchmark::State& state) {
  const std::vector<char>& src = Data();
  std::vector<char> dst(src.size());
  std::memset(dst.data(), 1, dst.size());  // touch the pages once, as a reused buffer is
  std::vector<CopySpan> spans;
  for (size_t at = 0; at < src.size(); at += size_t{32} << 20) {
    spans.push_back(CopySpan{dst.data() + at, src.data() + at, size_t{32} << 20});
  }
  const size_t threads = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    if (threads == 0) {
      std::memcpy(dst.data(), src.data(), src.size());
    } else {
      ParallelCopy(spans, threads);
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * src.size()));
  state.SetLabel(threads == 0 ? "one memcpy" : "ParallelCopy");
}
BENCHMARK(BM_StagingCopy)->Arg(0)->Arg(2)->Arg(4)->UseRealTime();

}  // namespace
}  // namespace titan::checkpoint
