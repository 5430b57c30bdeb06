// CheckpointWriter: one rank's side of saving a checkpoint.
//
// Save protocol (docs/checkpoint-format.md):
//   1. Every rank writes the pieces it owns into step_N/rank_R-<save_id>.data (sharded tensors:
//      its own slice; replicated tensors: the pieces a deterministic plan, identical on every
//      rank, assigns to it, so that each replicated byte is written once and writing is spread
//      across ranks), fsyncs it, then atomically writes step_N/rank_R.done with its chunk list.
//   2. Rank 0 waits for all `world_size` done markers of this save_id, merges them, checks that
//      every tensor is fully covered and that every referenced file exists and is long enough,
//      creates step_N/MANIFEST (commit.h: written, fsynced, linked into place only if absent;
//      a MANIFEST of another save that committed while this one ran fails this one with
//      ALREADY_EXISTS), then writes "latest".
//   3. Rank 0 applies retention (catalog.h).
// A crash at any point leaves the previous checkpoint committed and "latest" naming it.
//
// Node-local directories (SetCommitStore): when each node saves to a disk of its own, the
// ranks cannot see each other's markers there, so the commit moves to a store every rank
// reaches (s3://bucket/prefix). Each rank writes its data file locally as above, uploads it
// to the store (CopyDataFiles, every chunk checked), then writes its done marker at the store;
// rank 0 commits at the store (MANIFEST, then "latest") and applies retention there. A rank's
// upload is confirmed at the store (size and ETag, s3_storage.h) before its marker is written. The
// local directory keeps the data files as a cache for restores on the same node
// (ReadThroughStorage, read_through_storage.h) and never holds a MANIFEST; each rank prunes its own
// local files of steps older than the newest `keep_last` (2 when retention keeps all).
//
// Async: Save() copies the tensors into host staging memory (reused across saves) and returns;
// a background thread hashes, writes, fsyncs and (rank 0) commits. A Save() first waits for the
// previous one. Incremental: a chunk whose XXH3-128 and size match a chunk of this rank's
// previous save (or of the checkpoint loaded with SeedIndex) is referenced, not rewritten.
//
// Thread safety: Save/Wait/SeedIndex must be called from one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"
#include "src/checkpoint/catalog.h"
#include "src/checkpoint/manifest.h"
#include "src/checkpoint/mirror.h"
#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

// A tensor (or this rank's slice of one) in the caller's memory, row-major and contiguous.
struct TensorToSave {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;    // global shape
  std::vector<int64_t> offsets;  // this rank's slice; all zero when replicated
  std::vector<int64_t> lengths;  // == shape when replicated
  bool replicated = true;        // every rank holds the same full tensor
  const void* data = nullptr;    // prod(lengths) * dtype size bytes; valid until Save returns
};

struct SaveOptions {
  int rank = 0;
  int world_size = 1;
  std::string save_id;  // identical on every rank for one save; [a-z0-9]{1,32}
  bool async = true;
  bool incremental = true;
  RetentionPolicy retention;
  double commit_timeout_seconds = 1800;      // rank 0: how long to wait for the other ranks
  uint64_t chunk_bytes = uint64_t{8} << 20;  // checksum / dedup granularity
  // Async: threads that copy the state into staging memory (the blocking part of the save).
  // Memory bandwidth, not cores, bounds it; 4 per rank leaves cores for 8 ranks on a node.
  size_t staging_threads = 4;
  // This rank's non-tensor items: rank 0's become Manifest::items, every rank's rank_items[r].
  nlohmann::json items = nlohmann::json::object();
  nlohmann::json layout = nlohmann::json::object();  // rank 0's are recorded
};

struct SaveStats {
  int64_t step = -1;
  uint64_t staged_bytes = 0;      // copied to host staging memory (async)
  int64_t blocking_ns = 0;        // time Save() held the caller
  uint64_t written_bytes = 0;     // new chunk bytes this rank wrote
  uint64_t referenced_bytes = 0;  // chunk bytes this rank referenced from earlier checkpoints
  int64_t write_ns = 0;           // hashing + writing + fsync of this rank's data
  int64_t commit_ns = 0;          // rank 0: waiting for other ranks + manifest commit
  bool committed = false;         // rank 0 only
};

class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::shared_ptr<Storage> storage);
  ~CheckpointWriter();  // waits for a save in flight (its error is logged)
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Saves checkpoint `step`. Waits for the previous save first and returns its error, if any,
  // without starting this one. Errors: INVALID_ARGUMENT (bad tensor description), storage
  // errors (RESOURCE_EXHAUSTED on a full disk), DEADLINE_EXCEEDED (rank 0: a rank never
  // finished). With async, errors after staging are returned by the next Wait()/Save().
  Status Save(int64_t step, std::vector<TensorToSave> tensors, SaveOptions options);
  // Waits for the save in flight; returns its status (OK when none).
  Status Wait();
  // Rank 0: after each commit, hand the checkpoint to `mirror` for copying to a durable root
  // (mirror.h). Call before the first Save.
  void SetMirror(std::shared_ptr<CheckpointMirror> mirror) { mirror_ = std::move(mirror); }
  // Node-local directories (above): commit at `store` instead of the local root. Every rank of
  // the job must call it with the same store before its first Save; exclusive with SetMirror.
  void SetCommitStore(std::shared_ptr<Storage> store) { commit_store_ = std::move(store); }
  // Called once per successful save, when its background part ends (rank 0: committed; other
  // ranks: data and marker written), with that save's statistics; from the writer's thread
  // (async) or inside Save (sync). Must not call back into this writer. Call before Save.
  void SetOnSaved(std::function<void(const SaveStats&)> hook) { on_saved_ = std::move(hook); }
  // Lets the next incremental save reference the chunks of `manifest` (e.g. the one loaded).
  void SeedIndex(const Manifest& manifest);
  // Statistics of the last save (complete after Wait()).
  SaveStats last_stats() const { return stats_; }

 private:
  struct Piece;  // one slice this rank writes
  struct ChunkLocation {
    std::string path;
    uint64_t offset;
    uint64_t size_bytes;
    Hash128 hash;
  };

  Status Validate(const std::vector<TensorToSave>& tensors, const SaveOptions& options) const;
  Status WriteAndCommit(int64_t step, const std::vector<Piece>& pieces, const SaveOptions& options);
  Status WriteRankData(int64_t step, const std::vector<Piece>& pieces, const SaveOptions& options,
                       Manifest* done);
  // Node-local: uploads this rank's data file of `done` to the commit store.
  Status Upload(const Manifest& done, const SaveOptions& options);
  // Node-local: removes this rank's local files of steps older than the newest `keep` (>= 1).
  void PruneLocal(int rank, int keep);
  // Where done markers, MANIFEST and "latest" go: the commit store, else the root.
  Storage& commit_root() { return commit_store_ ? *commit_store_ : *storage_; }
  Status Commit(int64_t step, const SaveOptions& options);
  // Rank 0, after a failed commit: removes what the save left in step_N (every rank's data file
  // and marker; a full disk is the usual cause, and the next save needs the space), unless the
  // MANIFEST landed; when another save's MANIFEST is there (commit.h), only this save's data
  // files. Best effort: errors are logged.
  void RemoveUncommitted(int64_t step, const std::string& save_id);

  std::shared_ptr<Storage> storage_;
  std::shared_ptr<CheckpointMirror> mirror_;
  std::shared_ptr<Storage> commit_store_;  // node-local directories; null: the root commits
  std::thread worker_;
  Status worker_status_;
  SaveStats stats_;
  std::function<void(const SaveStats&)> on_saved_;
  int64_t save_begun_unix_ns_ = 0;  // wall clock when the save in flight began (commit.h)
  std::unique_ptr<char[]> staging_;
  size_t staging_bytes_ = 0;
  std::vector<Piece> pieces_;  // of the save in flight
  std::map<std::pair<std::pair<uint64_t, uint64_t>, uint64_t>, ChunkLocation> index_;
};

}  // namespace titan::checkpoint
