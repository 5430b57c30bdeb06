// Streams a Chrome-trace-format JSON document from a ByteSource in bounded memory.
//
// The document is either an object (Kineto: {"traceEvents": [...], "distributedInfo": ...}) or a
// bare array of events (the legacy autograd profiler). The events array is cut, by a light
// structural scan, into batches of whole events (about 1 MiB each) that simdjson On-Demand
// parses (the DOM API: it picks the best SIMD kernel at run time); every other top-level member
// is parsed on its own. Memory is a few MiB whatever the
// file size, and the cost is one extra scan over the bytes.
//
// Pipelined (constructed with `pipelined`), the batches are handed to `on_batch` on a worker
// thread (BatchPipeline) while this thread reads and scans on: one file on two cores. `on_batch`
// then runs on that thread, in document order, never at the same time as `on_member` or
// `on_top_level`; everything it wrote is visible to the caller when Run returns.
//
// Errors carry the uncompressed byte offset: truncated documents (DATA_LOSS), malformed JSON and
// documents that are neither shape (INVALID_ARGUMENT). The first error in document order is
// returned, pipelined or not.
// Thread safety: one JsonStream per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "src/base/status.h"
#include "src/trace/importers/batch_pipeline.h"
#include "src/trace/importers/byte_source.h"

namespace titan::trace {

// Where a value handed to a handler starts in the whole (uncompressed) document.
struct OffsetMap {
  int64_t begin = 0;
};

enum class TopLevel { kObject, kArray };

class JsonStream {
 public:
  struct Handler {
    // Called once, as soon as the document's shape is known, before any other callback.
    std::function<Status(TopLevel)> on_top_level;
    // A top-level member other than "traceEvents" (object documents only).
    std::function<Status(std::string_view key, simdjson::dom::element value, const OffsetMap&)>
        on_member;
    // Each element of the events array (`offsets.begin` is where the event starts).
    std::function<Status(simdjson::dom::object event, const OffsetMap&)> on_event;
    // Alternatively, whole batches "[event, ...]" (readable up to `capacity`), starting at
    // document offset `doc_offset`. Used instead of on_event when set; the only handler a
    // pipelined stream may run on its worker thread.
    std::function<Status(const char* json, size_t len, size_t capacity, int64_t doc_offset)>
        on_batch;
  };

  JsonStream(ByteSource* source, std::string name, bool pipelined = false)
      : source_(source), name_(std::move(name)), pipelined_(pipelined) {}

  // Reads the whole document. `top_level` tells which shape it had; `saw_events` whether an
  // events array was found.
  Status Run(const Handler& handler, TopLevel* top_level, bool* saw_events);
  uint64_t bytes_read() const { return base_ + end_; }
  // Whether the last Run handed batches to a worker thread.
  bool used_worker() const { return used_worker_; }

 private:
  Status Fill();                       // moves unread bytes to the front and reads more
  Result<char> PeekNonSpace();         // fills as needed; '\0' at end of input
  Result<size_t> ValueEnd();           // end of the value at pos_, filling as needed
  size_t ScanValue(size_t at) const;   // 0 if the value is not complete in the buffer
  size_t ScanString(size_t at) const;  // `at` is the opening quote; 0 if incomplete
  Status RunDocument(const Handler& handler, TopLevel* top_level, bool* saw_events);
  Status StreamArray(const Handler& handler);
  Status ParseBatch(const Handler& handler);
  // on_batch for one batch; const: it may run on the pipeline's worker thread.
  Status HandleBatch(const Handler& handler, const EventBatchBytes& batch) const;
  Status DrainPipeline();
  Status LocateMalformedEvent(const EventBatchBytes& batch, Status original) const;
  Status Error(StatusCode code, uint64_t offset, std::string_view what) const;

  ByteSource* source_;
  std::string name_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0;  // unread bytes are buf_[pos_, end_)
  uint64_t base_ = 0;         // document offset of buf_[0]
  bool eof_ = false;
  EventBatchBytes batch_;
  std::vector<size_t> element_begin_;  // buffer offsets of the events of the current batch
  size_t batch_end_ = 0;
  simdjson::dom::parser parser_;
  std::unique_ptr<simdjson::internal::dom_parser_implementation> stage1_;
  size_t stage1_capacity_ = 0;
  bool pipelined_ = false;
  bool used_worker_ = false;
  std::unique_ptr<BatchPipeline> pipeline_;  // from the first batch until Run returns
};

}  // namespace titan::trace
