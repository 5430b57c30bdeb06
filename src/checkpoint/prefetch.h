// Prefetch on restart: while `titan run` (re)starts its workers (seconds of interpreter and
// PyTorch start-up), it copies the durable root's newest checkpoint into the local directory
// the workers restore from, so that load_latest reads local files instead of the object store.
//
// What is copied: the durable root's latest committed checkpoint, when the local root has none
// or only older ones. The copy is CopyCheckpoint (copy.h): every chunk checked, files the local
// root already holds skipped (an incremental checkpoint fetches what changed), committed like a
// save; then step_N/DURABLE is written (the local copy is durable by construction). The whole
// checkpoint is fetched: the local directory serves every rank of the node (and, shared, of the
// job), as it does for saves.
//
// Node-local directories (writer.h): each node's titan run fetches only the data files its own
// ranks wrote (same world size: the shards they will read back), and commits nothing locally;
// load_latest reads the store's MANIFEST and takes every file it finds here whole from here
// (ReadThroughStorage), the rest (other ranks' pieces of replicated tensors, a resharded
// job's other slices) from the store.
//
// Protocol with readers: Start() creates <local>/.prefetch.lock and takes flock(LOCK_EX) on it
// before it returns, that is before titan run spawns any worker; the lock is released when the
// prefetch ends (committed, skipped, failed or cancelled) or when the process dies. A reader
// (titan.checkpoint's load_latest with a mirror) takes LOCK_SH on the same file first, so it
// waits for a prefetch in flight and never for a dead one. The descriptor is O_CLOEXEC, so
// workers spawned meanwhile do not inherit (and keep) the lock. The file's one line says who
// holds it, for people.
//
// Thread safety: Start(), done(), outcome() and the destructor from one thread (titan run's
// loop); the copy runs on a thread of its own.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "src/base/status.h"
#include "src/checkpoint/copy.h"
#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

inline constexpr std::string_view kPrefetchLockName = ".prefetch.lock";

// Node-local directories: the global ranks [first_rank, first_rank + ranks) run on this node.
struct NodeRanks {
  int first_rank = 0;
  int ranks = 1;
};

struct PrefetchOutcome {
  std::optional<int64_t> local_step;    // the local root's latest before the prefetch
  std::optional<int64_t> durable_step;  // the durable root's latest
  bool copied = false;  // durable_step is now committed in the local root (node-local: its
                        // node's data files are there)
  CopyReport copy;
  int64_t elapsed_ns = 0;  // from Start() to the end
};

class CheckpointPrefetch {
 public:
  // `local_dir`: a directory (created if missing); `durable`: where the mirror copies to
  // (s3://bucket/prefix or a directory); `node`: set when `local_dir` is node-local (above).
  // Errors: the local directory or its lock file cannot be made, or another process holds the
  // lock (FAILED_PRECONDITION, naming the holder).
  static Result<std::unique_ptr<CheckpointPrefetch>> Start(
      const std::string& local_dir, const std::string& durable,
      std::optional<NodeRanks> node = std::nullopt);
  ~CheckpointPrefetch();  // cancels a copy in flight (nothing is committed) and joins
  CheckpointPrefetch(const CheckpointPrefetch&) = delete;
  CheckpointPrefetch& operator=(const CheckpointPrefetch&) = delete;

  bool done() const { return done_.load(std::memory_order_acquire); }
  // Once done(): what was found and copied, or why it failed (the durable root's or the local
  // root's error, with the step being fetched).
  const Result<PrefetchOutcome>& outcome() const;

 private:
  CheckpointPrefetch(std::shared_ptr<Storage> local, std::string durable,
                     std::optional<NodeRanks> node, int lock_fd);
  Result<PrefetchOutcome> Run();
  // Node-local: this node's ranks' data files of the store's latest checkpoint.
  Result<CopyReport> FetchNodeFiles(Storage& store, int64_t step, const CopyOptions& options);

  const std::shared_ptr<Storage> local_;  // opened (and created) by Start
  const std::string durable_;
  const std::optional<NodeRanks> node_;
  const int lock_fd_;  // held (LOCK_EX) until the copy ends
  const int64_t start_ns_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> done_{false};
  Result<PrefetchOutcome> outcome_ = UnavailableError("still prefetching");  // set before done_
  std::thread thread_;
};

}  // namespace titan::checkpoint
