#include "src/checkpoint/reader.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "src/checkpoint/catalog.h"
#include "src/checkpoint/layout.h"

namespace titan::checkpoint {
namespace {

// Chunks are read (pread + checksum) by this many threads at once.
constexpr size_t kReadThreads = 4;
// A chunk is read and hashed in pieces of this size (fits the L2 cache of current server CPUs).
constexpr uint64_t kReadPieceBytes = uint64_t{512} << 10;

// One contiguous copy from the shard's byte space to the destination's byte space.
struct Run {
  uint64_t src = 0;
  uint64_t dst = 0;
  uint64_t size = 0;
};

std::vector<uint64_t> RowMajorStrides(const std::vector<int64_t>& lengths, uint64_t elem) {
  std::vector<uint64_t> strides(lengths.size());
  uint64_t s = elem;
  for (size_t d = lengths.size(); d-- > 0;) {
    strides[d] = s;
    s *= static_cast<uint64_t>(lengths[d]);
  }
  return strides;
}

// Runs copying the intersection of shard (so, sl) and target (to, tl); empty if disjoint.
std::vector<Run> IntersectionRuns(const std::vector<int64_t>& so, const std::vector<int64_t>& sl,
                                  const std::vector<int64_t>& to, const std::vector<int64_t>& tl,
                                  uint64_t elem) {
  size_t n = so.size();
  std::vector<int64_t> lo(n), hi(n);
  for (size_t d = 0; d < n; ++d) {
    lo[d] = std::max(so[d], to[d]);
    hi[d] = std::min(so[d] + sl[d], to[d] + tl[d]);
    if (lo[d] >= hi[d]) return {};
  }
  if (n == 0) return {Run{0, 0, elem}};
  std::vector<uint64_t> ss = RowMajorStrides(sl, elem), ts = RowMajorStrides(tl, elem);
  // Innermost contiguous block: trailing dims that are full in shard, target and intersection,
  // plus the first dim (from the back) that is not.
  size_t k = n - 1;
  while (k > 0 && hi[k] - lo[k] == sl[k] && hi[k] - lo[k] == tl[k]) --k;
  uint64_t run_size = static_cast<uint64_t>(hi[k] - lo[k]) * ss[k];
  std::vector<Run> runs;
  std::vector<int64_t> idx(lo.begin(), lo.begin() + static_cast<long>(k));
  while (true) {
    uint64_t src = static_cast<uint64_t>(lo[k] - so[k]) * ss[k];
    uint64_t dst = static_cast<uint64_t>(lo[k] - to[k]) * ts[k];
    for (size_t d = 0; d < k; ++d) {
      src += static_cast<uint64_t>(idx[d] - so[d]) * ss[d];
      dst += static_cast<uint64_t>(idx[d] - to[d]) * ts[d];
    }
    runs.push_back(Run{src, dst, run_size});
    size_t d = k;
    while (d > 0) {
      --d;
      if (++idx[d] < hi[d]) break;
      idx[d] = lo[d];
      if (d == 0) return runs;
    }
    if (k == 0) return runs;
  }
}

}  // namespace

Result<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(std::shared_ptr<Storage> storage,
                                                                 int64_t step) {
  TITAN_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(*storage, step));
  return std::make_unique<CheckpointReader>(std::move(storage), std::move(manifest));
}

CheckpointReader::CheckpointReader(std::shared_ptr<Storage> storage, Manifest manifest)
    : storage_(std::move(storage)), manifest_(std::move(manifest)) {
  where_ = fmt::format("checkpoint {}", storage_->Describe(StepDirName(manifest_.step)));
  files_.resize(manifest_.files.size());
}

const TensorEntry* CheckpointReader::FindTensor(const std::string& name) const {
  for (const TensorEntry& t : manifest_.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Result<const RandomAccessFile*> CheckpointReader::File(uint32_t index) {
  std::lock_guard<std::mutex> lock(files_mu_);
  if (!files_[index]) {
    auto file = storage_->NewRandomAccessFile(manifest_.files[index]);
    if (!file.ok()) {
      return DataLossError(fmt::format("{}: data file {} cannot be opened: {}", where_,
                                       manifest_.files[index], file.status().message()));
    }
    files_[index] = std::move(file).value();
  }
  return files_[index].get();
}

Status CheckpointReader::ReadChunk(const TensorEntry& tensor, const ChunkRef& c,
                                   uint64_t shard_byte, void* dst) {
  TITAN_ASSIGN_OR_RETURN(const RandomAccessFile* file, File(c.file));
  // Read and hash in cache-sized pieces: each piece is hashed while it is still in the cache
  // the read put it in, so the chunk crosses the memory bus once.
  ChunkHasher hasher;
  char* out = static_cast<char*>(dst);
  for (uint64_t at = 0; at < c.size_bytes; at += kReadPieceBytes) {
    const uint64_t size = std::min(kReadPieceBytes, c.size_bytes - at);
    Status status = file->ReadAt(c.offset + at, size, out + at);
    if (!status.ok()) {
      return DataLossError(fmt::format("{}: tensor \"{}\" (bytes {}..{} of its shard): {}", where_,
                                       tensor.name, shard_byte, shard_byte + c.size_bytes,
                                       status.message()));
    }
    hasher.Update(out + at, size);
  }
  bytes_read_ += c.size_bytes;
  Hash128 actual = hasher.Digest();
  if (!(actual == c.hash)) {
    return DataLossError(fmt::format(
        "{}: checksum mismatch in file {} at byte offset {} ({} bytes), tensor \"{}\" shard "
        "bytes {}..{}: xxh3-128 is {}, the manifest says {}. The data is corrupt; load an "
        "older checkpoint (load_latest(..., fallback=True) does this)",
        where_, manifest_.files[c.file], c.offset, c.size_bytes, tensor.name, shard_byte,
        shard_byte + c.size_bytes, HashToHex(actual), HashToHex(c.hash)));
  }
  return OkStatus();
}

Status CheckpointReader::ReadTensor(const std::string& name, void* dst, size_t dst_bytes) {
  const TensorEntry* t = FindTensor(name);
  if (t == nullptr) {
    return NotFoundError(fmt::format("{} has no tensor \"{}\"", where_, name));
  }
  return ReadSlice(name, std::vector<int64_t>(t->shape.size(), 0), t->shape, dst, dst_bytes);
}

Status CheckpointReader::ReadSlice(const std::string& name, const std::vector<int64_t>& offsets,
                                   const std::vector<int64_t>& lengths, void* dst,
                                   size_t dst_bytes) {
  const TensorEntry* t = FindTensor(name);
  if (t == nullptr) {
    return NotFoundError(fmt::format("{} has no tensor \"{}\"", where_, name));
  }
  if (offsets.size() != t->shape.size() || lengths.size() != t->shape.size()) {
    return InvalidArgumentError(
        fmt::format("{}: tensor \"{}\" has {} dimensions but the requested slice has {}", where_,
                    name, t->shape.size(), lengths.size()));
  }
  for (size_t d = 0; d < lengths.size(); ++d) {
    if (offsets[d] < 0 || lengths[d] < 0 || offsets[d] + lengths[d] > t->shape[d]) {
      return InvalidArgumentError(
          fmt::format("{}: requested slice of tensor \"{}\" lies outside its shape in dimension {} "
                      "(offset {} + length {} > {})",
                      where_, name, d, offsets[d], lengths[d], t->shape[d]));
    }
  }
  uint64_t elem = DTypeSize(t->dtype);
  uint64_t want = static_cast<uint64_t>(NumElements(lengths)) * elem;
  if (want != dst_bytes) {
    return InvalidArgumentError(
        fmt::format("{}: tensor \"{}\" slice needs {} bytes ({}), the destination has {}", where_,
                    name, want, DTypeName(t->dtype), dst_bytes));
  }
  // Plan one task per chunk that overlaps the slice, then run the tasks on a few threads.
  struct Task {
    const ChunkRef* chunk;
    uint64_t shard_byte;           // where the chunk starts in its shard
    const std::vector<Run>* runs;  // the shard's runs
    size_t first_run;              // first run overlapping the chunk
    bool direct;                   // the whole chunk lands inside one run
  };
  std::vector<std::vector<Run>> shard_runs;
  shard_runs.reserve(t->shards.size());
  std::vector<Task> tasks;
  uint64_t covered = 0;
  for (const ShardEntry& shard : t->shards) {
    shard_runs.push_back(IntersectionRuns(shard.offsets, shard.lengths, offsets, lengths, elem));
    const std::vector<Run>& runs = shard_runs.back();
    if (runs.empty()) continue;
    size_t r = 0;
    uint64_t chunk_start = 0;
    for (const ChunkRef& c : shard.chunks) {
      uint64_t chunk_end = chunk_start + c.size_bytes;
      while (r < runs.size() && runs[r].src + runs[r].size <= chunk_start) ++r;
      if (r == runs.size()) break;
      if (runs[r].src < chunk_end) {
        bool direct = runs[r].src <= chunk_start && runs[r].src + runs[r].size >= chunk_end;
        tasks.push_back(Task{&c, chunk_start, &runs, r, direct});
        for (size_t rr = r; rr < runs.size() && runs[rr].src < chunk_end; ++rr) {
          uint64_t lo = std::max(runs[rr].src, chunk_start);
          uint64_t hi = std::min(runs[rr].src + runs[rr].size, chunk_end);
          if (lo < hi) covered += hi - lo;
        }
      }
      chunk_start = chunk_end;
    }
  }
  if (covered != want) {
    return DataLossError(
        fmt::format("{}: the shards of tensor \"{}\" cover only {} of the {} bytes requested; the "
                    "checkpoint is incomplete",
                    where_, name, covered, want));
  }
  char* out = static_cast<char*>(dst);
  std::atomic<size_t> next{0};
  std::mutex error_mu;
  Status first_error;
  auto work = [&] {
    std::vector<char> scratch;
    for (size_t i = next++; i < tasks.size(); i = next++) {
      const Task& task = tasks[i];
      const std::vector<Run>& runs = *task.runs;
      const Run& run = runs[task.first_run];
      Status status;
      if (task.direct) {
        status = ReadChunk(*t, *task.chunk, task.shard_byte,
                           out + run.dst + (task.shard_byte - run.src));
      } else {
        scratch.resize(task.chunk->size_bytes);
        status = ReadChunk(*t, *task.chunk, task.shard_byte, scratch.data());
        uint64_t chunk_end = task.shard_byte + task.chunk->size_bytes;
        for (size_t rr = task.first_run;
             status.ok() && rr < runs.size() && runs[rr].src < chunk_end; ++rr) {
          uint64_t lo = std::max(runs[rr].src, task.shard_byte);
          uint64_t hi = std::min(runs[rr].src + runs[rr].size, chunk_end);
          if (lo >= hi) continue;
          std::memcpy(out + runs[rr].dst + (lo - runs[rr].src),
                      scratch.data() + (lo - task.shard_byte), hi - lo);
        }
      }
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (first_error.ok()) first_error = status;
        next = tasks.size();  // stop the others
      }
    }
  };
  size_t threads = std::min<size_t>(kReadThreads, tasks.size());
  std::vector<std::thread> helpers;
  for (size_t i = 1; i < threads; ++i) helpers.emplace_back(work);
  work();
  for (std::thread& h : helpers) h.join();
  return first_error;
}

CheckpointReader::VerifyReport CheckpointReader::VerifyAll() {
  VerifyReport report;
  std::vector<char> buffer;
  for (const TensorEntry& t : manifest_.tensors) {
    for (const ShardEntry& shard : t.shards) {
      uint64_t shard_byte = 0;
      for (const ChunkRef& c : shard.chunks) {
        buffer.resize(c.size_bytes);
        Status status = ReadChunk(t, c, shard_byte, buffer.data());
        if (!status.ok()) report.errors.push_back(status);
        ++report.chunks;
        report.bytes += c.size_bytes;
        shard_byte += c.size_bytes;
      }
    }
  }
  return report;
}

}  // namespace titan::checkpoint
