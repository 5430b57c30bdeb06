// Tiering: checkpoints are saved to a fast root (local NVMe, a parallel file system) as always
// and then copied in the background to a durable one (s3://bucket/prefix), so the save blocks
// training no longer than before and a lost node or file system still leaves a checkpoint.
//
// A committed checkpoint is "local" until its copy commits at the durable root; then the mirror
// writes step_N/DURABLE (JSON: where, when, bytes) in the local root, which `titan ckpt ls`
// shows. The copy is CopyCheckpoint (copy.h): every chunk checked, data before MANIFEST, files
// the durable root already holds skipped (an incremental checkpoint uploads what changed).
// After each copy the durable root gets the same retention as the local one.
//
// One copy runs at a time. Steps submitted while one is copying queue as "the newest": when a
// copy ends, only the newest submitted step is copied next (older ones are superseded; each is
// logged). A failed copy is logged and kept as last_error(); the next Submit tries again with
// the newer step.
// Thread safety: all methods may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "src/base/status.h"
#include "src/checkpoint/catalog.h"
#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

inline constexpr std::string_view kDurableMarkerName = "DURABLE";
std::string DurableMarkerPath(int64_t step);  // "step_0000000100/DURABLE"
// Writes step_N/DURABLE in `local` (atomically): committed checkpoint `step` is also committed
// at `durable`, where `copied_bytes` went in `copy_ns` (0 bytes for a prefetch that found the
// files present). Errors are `local`'s.
Status WriteDurableMarker(Storage& local, int64_t step, const Storage& durable,
                          uint64_t copied_bytes, int64_t copy_ns);

class CheckpointMirror {
 public:
  // on_durable (optional): called from the copying thread after each copy commits and its
  // DURABLE marker is written, with the step and the bytes copied.
  CheckpointMirror(std::shared_ptr<Storage> local, std::shared_ptr<Storage> durable,
                   std::function<void(int64_t step, uint64_t copied_bytes)> on_durable = {});
  ~CheckpointMirror();  // finishes the copy in flight and the one queued
  CheckpointMirror(const CheckpointMirror&) = delete;
  CheckpointMirror& operator=(const CheckpointMirror&) = delete;

  // Queues committed checkpoint `step` of the local root for copying.
  void Submit(int64_t step, RetentionPolicy retention);
  // Blocks until nothing is queued or copying; returns the status of the last copy.
  Status Wait();
  // The newest step made durable by this mirror, if any.
  std::optional<int64_t> durable_step() const;
  const Storage& durable() const { return *durable_; }

 private:
  void Run();

  const std::shared_ptr<Storage> local_;
  const std::shared_ptr<Storage> durable_;
  const std::function<void(int64_t, uint64_t)> on_durable_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<int64_t> queued_;        // guarded by mu_
  RetentionPolicy retention_;            // guarded by mu_
  bool busy_ = false;                    // guarded by mu_
  bool stopping_ = false;                // guarded by mu_
  Status last_status_;                   // guarded by mu_
  std::optional<int64_t> durable_step_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace titan::checkpoint
