#include "src/checkpoint/mirror.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/base/duration.h"
#include "src/base/log.h"
#include "src/checkpoint/copy.h"
#include "src/checkpoint/layout.h"

namespace titan::checkpoint {

std::string DurableMarkerPath(int64_t step) {
  return StepDirName(step) + "/" + std::string(kDurableMarkerName);
}

Status WriteDurableMarker(Storage& local, int64_t step, const Storage& durable,
                          uint64_t copied_bytes, int64_t copy_ns) {
  nlohmann::json marker = {{"durable", durable.Describe(StepDirName(step))},
                           {"unix_ns", WallNowNs()},
                           {"copied_bytes", copied_bytes},
                           {"seconds", static_cast<double>(copy_ns) / 1e9}};
  return local.WriteFileAtomic(DurableMarkerPath(step), marker.dump() + "\n");
}

CheckpointMirror::CheckpointMirror(std::shared_ptr<Storage> local, std::shared_ptr<Storage> durable,
                                   std::function<void(int64_t, uint64_t)> on_durable)
    : local_(std::move(local)), durable_(std::move(durable)), on_durable_(std::move(on_durable)) {
  thread_ = std::thread([this] { Run(); });
}

CheckpointMirror::~CheckpointMirror() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CheckpointMirror::Submit(int64_t step, RetentionPolicy retention) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queued_) {
      Log(LogLevel::kInfo, "checkpoint", "{} superseded by step {} before it was copied to {}",
          local_->Describe(StepDirName(*queued_)), step, durable_->Describe(""));
    }
    queued_ = step;
    retention_ = retention;
  }
  cv_.notify_all();
}

Status CheckpointMirror::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !queued_ && !busy_; });
  return last_status_;
}

std::optional<int64_t> CheckpointMirror::durable_step() const {
  std::lock_guard<std::mutex> lock(mu_);
  return durable_step_;
}

void CheckpointMirror::Run() {
  // The copy yields the CPU to training (and to the next save's staging copy): this thread and
  // the threads it starts (ranged reads, part uploads) inherit the lower priority.
  LowerThreadPriorityForCopy();
  while (true) {
    int64_t step = 0;
    RetentionPolicy retention;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || queued_; });
      if (!queued_) return;  // stopping with nothing queued
      step = *queued_;
      retention = retention_;
      queued_.reset();
      busy_ = true;
    }
    int64_t started_ns = MonoNowNs();
    Result<CopyReport> copied = CopyCheckpoint(*local_, step, *durable_);
    Status status = copied.status();
    if (status.ok()) {
      status = WriteDurableMarker(*local_, step, *durable_, copied->copied_bytes,
                                  MonoNowNs() - started_ns);
      if (!status.ok() && !local_->FileSize(ManifestPath(step)).ok()) {
        status = OkStatus();  // local retention dropped it meanwhile; the store has it
      }
    }
    if (status.ok()) {
      Log(LogLevel::kInfo, "checkpoint", "step {} durable at {} ({} bytes copied in {})", step,
          durable_->Describe(StepDirName(step)), copied->copied_bytes,
          FormatDurationShort(MonoNowNs() - started_ns));
      if (on_durable_) on_durable_(step, copied->copied_bytes);
      if (retention.keep_last > 0) {
        Result<GcReport> gc = CollectGarbage(*durable_, retention, /*dry_run=*/false);
        if (!gc.ok()) {
          Log(LogLevel::kWarning, "checkpoint", "retention at {} failed: {}",
              durable_->Describe(""), gc.status().ToString());
        } else {
          for (const std::string& why : gc->skipped) {
            Log(LogLevel::kWarning, "checkpoint", "retention at {}: {}", durable_->Describe(""),
                why);
          }
        }
      }
    } else {
      status =
          status.WithContext(fmt::format("copying step {} to {}", step, durable_->Describe("")));
      Log(LogLevel::kWarning, "checkpoint", "{}; it stays local only until a later step is copied",
          status.ToString());
    }
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
    last_status_ = status;
    if (status.ok()) durable_step_ = step;
    cv_.notify_all();
  }
}

}  // namespace titan::checkpoint
