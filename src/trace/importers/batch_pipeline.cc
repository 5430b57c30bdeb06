#include "src/trace/importers/batch_pipeline.h"

#include <pthread.h>

#include <utility>

namespace titan::trace {

BatchPipeline::BatchPipeline(int workers, Parse parse, Merge merge)
    : parse_(std::move(parse)), merge_(std::move(merge)), done_(SlotsFor(workers)) {
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { RunWorker(); });
}

BatchPipeline::~BatchPipeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

Status BatchPipeline::Submit(EventBatchBytes* batch) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return !error_.ok() || submitted_ - merged_ < slots(); });
  if (!error_.ok()) return error_;
  queue_.push_back(Job{submitted_++, std::move(*batch)});
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
  changed_.wait(lock, [&] { return !error_.ok() || merged_ == submitted_; });
  return error_;
}

void BatchPipeline::MergeReadySlots(std::unique_lock<std::mutex>& lock) {
  while (!merging_ && error_.ok() && merged_ < submitted_ && done_[merged_ % slots()]) {
    const size_t slot = merged_ % slots();
    Status status = std::move(*done_[slot]);
    done_[slot].reset();
    merging_ = true;
    lock.unlock();
    if (status.ok()) status = merge_(slot);
    lock.lock();
    merging_ = false;
    ++merged_;
    if (!status.ok()) {
      error_ = std::move(status);
      queue_.clear();
    }
  }
}

void BatchPipeline::RunWorker() {
  pthread_setname_np(pthread_self(), "titan-parse");  // for top -H and perf
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const size_t slot = job.seq % slots();
    Status status = parse_(job.batch, slot);
    lock.lock();
    if (spare_.size() < slots()) spare_.push_back(std::move(job.batch));
    done_[slot] = std::move(status);
    MergeReadySlots(lock);
    changed_.notify_all();
  }
}

}  // namespace titan::trace
