// A pipeline for one trace file: the thread that reads the document cuts it into batches of
// whole events and hands them to `workers` threads that parse them at once, each into a slot of
// its own; the parsed slots are then merged in document order, one at a time, by whichever
// worker finishes the next one. One file on every core.
//
// Bounded: at most slots() = workers + kQueuedBatches batches are between Submit and their
// merge; Submit blocks beyond that, so memory is a few batches (a few hundred KiB each) and their
// slots whatever the file size. Buffers are recycled between the stages.
// Errors: the first batch, in submission order, whose parse or merge fails stops the pipeline;
// later batches are dropped (their slots are never merged), and Submit and Drain return that
// status (it is earlier in the document than anything the producer finds after it).
// Thread safety: Submit and Drain are called by one producer thread. `parse` runs on the worker
// threads, concurrently for different slots (a slot is parsed again only after it was merged);
// `merge` runs on one worker at a time, in submission order, never beside a parse of its slot.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "src/base/status.h"

namespace titan::trace {

// "[event,event,...]" out of the document, padded for simdjson: bytes[begin, begin + len).
struct EventBatchBytes {
  std::vector<char> bytes;  // readable up to bytes.size() >= begin + len + SIMDJSON_PADDING
  size_t begin = 0;
  size_t len = 0;
  int64_t doc_offset = 0;               // document offset of json()[0] (the added '[' is -1)
  std::vector<uint32_t> element_begin;  // where each event starts in json() (exact cuts only)

  const char* json() const { return bytes.data() + begin; }
  size_t capacity() const { return bytes.size() - begin; }
};

class BatchPipeline {
 public:
  static constexpr size_t kQueuedBatches = 2;
  // Parses `batch` into slot `slot` (< slots()).
  using Parse = std::function<Status(const EventBatchBytes& batch, size_t slot)>;
  // Folds slot `slot` into the result, in submission order.
  using Merge = std::function<Status(size_t slot)>;

  // `workers` >= 1 threads are started at once.
  BatchPipeline(int workers, Parse parse, Merge merge);
  ~BatchPipeline();  // drops queued batches and joins the workers
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // How many slots the callbacks are called with (0 .. slots() - 1).
  static size_t SlotsFor(int workers) { return static_cast<size_t>(workers) + kQueuedBatches; }
  size_t slots() const { return done_.size(); }

  // Queues `*batch`; `*batch` is then a recycled (or empty) buffer to fill next. Blocks while
  // slots() batches are unmerged. Returns the first error, if any (nothing is queued then).
  Status Submit(EventBatchBytes* batch);
  // Waits until every submitted batch has been merged; the first error, if any.
  Status Drain();

 private:
  void RunWorker();
  void MergeReadySlots(std::unique_lock<std::mutex>& lock);  // holds mu_ on entry and exit

  struct Job {
    uint64_t seq = 0;
    EventBatchBytes batch;
  };

  Parse parse_;
  Merge merge_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Job> queue_;                    // guarded by mu_
  std::vector<EventBatchBytes> spare_;       // guarded by mu_: buffers the workers are done with
  std::vector<std::optional<Status>> done_;  // guarded by mu_: by slot, a parse's outcome
  uint64_t submitted_ = 0;                   // guarded by mu_
  uint64_t merged_ = 0;                      // guarded by mu_: batches merged (or dropped)
  bool merging_ = false;                     // guarded by mu_: a worker is in merge_
  bool stopping_ = false;                    // guarded by mu_
  Status error_;                             // guarded by mu_
  std::vector<std::thread> workers_;         // last: started once the rest exists
};

}  // namespace titan::trace
