#include "src/trace/importers/batch_pipeline.h"

#include <pthread.h>

#include <utility>

namespace titan::trace {

BatchPipeline::BatchPipeline(Work work)
    : work_(std::move(work)), worker_([this] { RunWorker(); }) {}

BatchPipeline::~BatchPipeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

Status BatchPipeline::Submit(EventBatchBytes* batch) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return !error_.ok() || queue_.size() < kQueuedBatches; });
  if (!error_.ok()) return error_;
  queue_.push_back(std::move(*batch));
  if (spare_.empty()) {
    *batch = EventBatchBytes{};
  } else {
    *batch = std::move(spare_.back());
    spare_.pop_back();
  }
  lock.unlock();
  changed_.notify_all();
  return OkStatus();
}

Status BatchPipeline::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return !error_.ok() || (queue_.empty() && !busy_); });
  return error_;
}

void BatchPipeline::RunWorker() {
  pthread_setname_np(pthread_self(), "titan-parse");  // for top -H and perf
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    EventBatchBytes batch = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    Status status = work_(batch);
    lock.lock();
    busy_ = false;
    if (spare_.size() < kQueuedBatches) spare_.push_back(std::move(batch));
    if (!status.ok() && error_.ok()) {
      error_ = std::move(status);
      queue_.clear();
    }
    changed_.notify_all();
  }
}

}  // namespace titan::trace
