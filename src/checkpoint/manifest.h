// The checkpoint manifest: what a committed checkpoint contains and where each byte lives.
// See docs/checkpoint-format.md for the on-disk format. A manifest is JSON wrapped in a
// one-line envelope that carries its length and XXH3-64 checksum, so that any flipped bit in the
// file is detected before a single field is trusted:
//
//   titan-checkpoint v1 xxh3-64=<16 hex digits> bytes=<decimal length of the JSON>\n
//   <JSON>
//
// The same structure (kind "rank_done") is the per-rank "done" marker that rank 0 merges.
// ParseManifest validates everything a hostile or corrupt file could get wrong (paths that
// escape the checkpoint root, absurd sizes, unknown dtypes, chunk lists that do not cover the
// shard) and never throws. Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/checkpoint/dtype.h"
#include "src/checkpoint/hash.h"

namespace titan::checkpoint {

inline constexpr int kFormatVersion = 1;
inline constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 50;
inline constexpr size_t kMaxManifestBytes = size_t{512} << 20;
inline constexpr int kMaxRank = 16;

// A contiguous byte range of one data file.
struct ChunkRef {
  uint32_t file = 0;  // index into Manifest::files
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
  Hash128 hash;
};

// A rectangular slice of a tensor, stored row-major; `chunks` hold its bytes in order.
struct ShardEntry {
  std::vector<int64_t> offsets;  // origin of the slice in the tensor's global coordinates
  std::vector<int64_t> lengths;  // extent of the slice per dimension
  std::vector<ChunkRef> chunks;
};

struct TensorEntry {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;  // global shape
  std::vector<ShardEntry> shards;
};

struct Manifest {
  std::string kind = "manifest";  // or "rank_done"
  int64_t step = 0;
  int world_size = 1;
  int rank = 0;  // the writer of a rank_done marker; 0 in a manifest
  std::string save_id;
  int64_t created_unix_ns = 0;
  // Data files, relative to the checkpoint root: "step_0000000100/rank_00003-<save_id>.data".
  // Files of earlier checkpoints appear here when an incremental save references their chunks.
  std::vector<std::string> files;
  std::vector<TensorEntry> tensors;
  nlohmann::json items = nlohmann::json::object();  // rank 0's non-tensor items (opaque)
  // Each rank's non-tensor items (RNG states, data-loader position), by rank; empty in done
  // markers (a marker's own items are in `items`).
  std::vector<nlohmann::json> rank_items;
  nlohmann::json layout = nlohmann::json::object();  // parallel layout the job was saved with
};

// Number of elements of a slice / shape; -1 on overflow beyond kMaxTensorBytes elements.
int64_t NumElements(const std::vector<int64_t>& lengths);

// Why the shards of `tensor` do not tile its shape exactly (every element in exactly one shard:
// an overlap, a gap, or both, which an element count alone cannot tell apart from a tiling),
// or nullopt when they do. Each shard must already lie within the shape. Cost: linear in the
// cells of the grid that the shards' boundaries cut the tensor into (about the number of
// shards for the usual 1-D or 2-D shardings); past 2^22 cells the shards are reported as too
// fragmented to check instead.
std::optional<std::string> ShardTilingProblem(const TensorEntry& tensor);

// True if `path` is "<step dir>/<file>" with safe components ([A-Za-z0-9._-], not "." or "..").
bool IsSafeDataPath(std::string_view path);

std::string SerializeManifest(const Manifest& manifest);
// `where` names the file in error messages. Errors: DATA_LOSS (envelope or checksum broken),
// INVALID_ARGUMENT (a field is missing, of the wrong type or out of range).
Result<Manifest> ParseManifest(std::string_view bytes, std::string_view where);

}  // namespace titan::checkpoint
