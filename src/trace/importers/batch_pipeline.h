// A two-stage pipeline for one trace file: the thread that reads and scans the document hands
// batches of whole events to one worker thread that parses them, in order, so a single large
// trace uses two cores (the scan and the parse cost about the same).
//
// Bounded: at most kQueuedBatches batches wait; Submit blocks beyond that, so memory is a few
// batches (about 1 MiB each) whatever the file size. Buffers are recycled between the stages.
// Errors: the first batch whose work fails stops the worker; later batches are dropped, and
// Submit and Drain return that status (it is earlier in the document than anything the producer
// finds after it).
// Thread safety: Submit and Drain are called by one producer thread; `work` runs on the worker
// thread, one batch at a time, in submission order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "src/base/status.h"

namespace titan::trace {

// "[event,event,...]" copied out of the document, padded for simdjson.
struct EventBatchBytes {
  std::vector<char> bytes;  // readable up to bytes.size() >= len + SIMDJSON_PADDING
  size_t len = 0;
  int64_t doc_offset = 0;               // document offset of bytes[0] (the added '[' is -1)
  std::vector<uint32_t> element_begin;  // where each event starts in `bytes`
};

class BatchPipeline {
 public:
  static constexpr size_t kQueuedBatches = 2;
  using Work = std::function<Status(const EventBatchBytes&)>;

  explicit BatchPipeline(Work work);
  ~BatchPipeline();  // drops queued batches and joins the worker
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // Queues `*batch` for the worker; `*batch` is then a recycled (or empty) buffer to fill next.
  // Blocks while kQueuedBatches wait. Returns the worker's first error, if any (not queued then).
  Status Submit(EventBatchBytes* batch);
  // Waits until every queued batch has been worked on; the first error, if any.
  Status Drain();

 private:
  void RunWorker();

  Work work_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<EventBatchBytes> queue_;   // guarded by mu_
  std::vector<EventBatchBytes> spare_;  // guarded by mu_: buffers the worker is done with
  bool busy_ = false;                   // guarded by mu_: the worker holds a batch
  bool stopping_ = false;               // guarded by mu_
  Status error_;                        // guarded by mu_
  std::thread worker_;                  // last: started once the rest exists
};

}  // namespace titan::trace
