// Streams a Chrome-trace-format JSON document from a ByteSource in bounded memory.
//
// The document is either an object (Kineto: {"traceEvents": [...], "distributedInfo": ...}) or a
// bare array of events (the legacy autograd profiler). The events array is cut into batches of
// whole events (about kBatchBytes each, see Cutting below) that simdjson On-Demand
// parses (the DOM API: it picks the best SIMD kernel at run time); every other top-level member
// is parsed on its own. Memory is a few MiB whatever the file size.
//
// With Options::parse_threads > 0 the batches are parsed (`on_batch`) on that many worker
// threads (BatchPipeline) at once, each into its own slot, while this thread reads and cuts on,
// and merged (`on_batch_merge`) in document order: one file on every core. Neither callback runs
// at the same time as `on_member` or `on_top_level`; everything they wrote is visible to the
// caller when Run returns.
//
// Cutting. The exact cut walks simdjson's structural index of every byte to find where each
// event ends, and copies each batch out. The seam cut (Options::seam_cut) reads about a batch
// into the buffer, looks back from its end for the last seam, '}' ',' '{' with optional
// whitespace between, hands the buffer over as the batch without a copy, and leaves the
// structure to the parse. A seam inside a string or a nested value is not between two events; the
// batch before the first such seam then never parses (it ends inside a string or with a value left
// open, and the batch parser rejects both), Run fails, and seam_cut_used() tells the caller to read
// the document again with exact cuts. Without a seam in a full buffer (near the end of the array)
// the exact cut takes over.
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
#include <utility>
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

struct JsonStreamOptions {
  static constexpr size_t kBatchBytes = 256 << 10;
  int parse_threads = 0;  // threads parsing batches beside the reading one; 0: all on that one
  bool seam_cut = false;  // cut batches at seams (see above); with on_batch only
  size_t batch_bytes = kBatchBytes;  // about how large a batch is (tests and fuzzers: small)
};

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
    // document offset `doc_offset`, parsed into slot `slot` (< batch_slots()); then
    // on_batch_merge folds that slot into the result, in document order. Used instead of
    // on_event when set; the only handlers a pipelined stream runs on its worker threads.
    std::function<Status(const char* json, size_t len, size_t capacity, int64_t doc_offset,
                         size_t slot)>
        on_batch;
    std::function<Status(size_t slot)> on_batch_merge;
  };

  using Options = JsonStreamOptions;
  JsonStream(ByteSource* source, std::string name, Options options = {})
      : source_(source), name_(std::move(name)), options_(options) {}

  // Reads the whole document. `top_level` tells which shape it had; `saw_events` whether an
  // events array was found.
  Status Run(const Handler& handler, TopLevel* top_level, bool* saw_events);
  uint64_t bytes_read() const { return base_ + end_; }
  // How many slots on_batch and on_batch_merge are called with.
  size_t batch_slots() const {
    return options_.parse_threads > 0 ? BatchPipeline::SlotsFor(options_.parse_threads) : 1;
  }
  // Whether the last Run handed batches to worker threads.
  bool used_workers() const { return used_workers_; }
  // Whether the last Run cut a batch at a seam: if it failed, the document may be fine and
  // must be read again without seam_cut for an answer.
  bool seam_cut_used() const { return seam_cut_used_; }

 private:
  Status Fill();                       // moves unread bytes to the front and reads more
  Result<char> PeekNonSpace();         // fills as needed; '\0' at end of input
  Result<size_t> ValueEnd();           // end of the value at pos_, filling as needed
  size_t ScanValue(size_t at) const;   // 0 if the value is not complete in the buffer
  size_t ScanString(size_t at) const;  // `at` is the opening quote; 0 if incomplete
  Status RunDocument(const Handler& handler, TopLevel* top_level, bool* saw_events);
  Status StreamArray(const Handler& handler);
  // Seam cuts from pos_ on (pos_ is after '[' when `*first`, else after an event's '}').
  Status CutAtSeams(const Handler& handler, bool* first);
  // Where the next event starts and the last seam in the buffer at least half a batch past it;
  // {0, 0} if there is none.
  std::pair<size_t, size_t> FindLastSeam(bool first) const;
  // Makes buf_[start, seam] the batch in place (no copy) and moves what follows to a new buf_.
  void HandOverBuffer(size_t start, size_t seam);
  Status ParseBatch(const Handler& handler);  // the events in element_begin_ (exact cuts)
  Status SendBatch(const Handler& handler);   // batch_, to on_batch and on_batch_merge
  void CopyBatch(size_t begin, size_t end);   // buf_[begin, end) into batch_ as "[...]"
  // on_batch for one batch; const: it may run on a worker thread.
  Status HandleBatch(const Handler& handler, const EventBatchBytes& batch, size_t slot) const;
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
  Options options_;
  bool used_workers_ = false;
  bool seam_cut_used_ = false;
  std::unique_ptr<BatchPipeline> pipeline_;  // from the first batch until Run returns
};

}  // namespace titan::trace
