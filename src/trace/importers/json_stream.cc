#include "src/trace/importers/json_stream.h"

#include <cstring>
#include <tuple>

#include <fmt/format.h>

namespace titan::trace {
namespace {

// The read buffer for exact cuts starts this many batches large (4 MiB at the default batch size;
// small in tests and fuzzers, whose small batches then exercise the buffer's growth).
constexpr size_t kInitialBufferBatches = 16;
constexpr size_t kMaxValueBytes = size_t{1} << 31;  // one event or member larger than 2 GiB: no

inline bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
inline bool EndsScalar(char c) { return c == ',' || c == '}' || c == ']' || IsSpace(c); }

}  // namespace

Status JsonStream::Error(StatusCode code, uint64_t offset, std::string_view what) const {
  return Status(code, fmt::format("{}: {} at byte {}", name_, what, offset));
}

Status JsonStream::Fill() {
  if (pos_ > 0) {
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    base_ += pos_;
    end_ -= pos_;
    pos_ = 0;
  }
  // The last SIMDJSON_PADDING bytes are never filled: simdjson may read past the data.
  if (buf_.empty()) {  // seam cuts hand the buffer over as a batch: a batch's size then
    size_t initial = options_.batch_bytes * (options_.seam_cut ? 1 : kInitialBufferBatches);
    buf_.resize(std::max<size_t>(initial, 64) + simdjson::SIMDJSON_PADDING);
  }
  size_t capacity = buf_.size() - simdjson::SIMDJSON_PADDING;
  if (end_ >= capacity / 2) {  // mostly one incomplete value: grow
    if (capacity >= kMaxValueBytes) {
      return Error(StatusCode::kResourceExhausted, base_,
                   "a single JSON value is larger than 2 GiB; this is not a profiler trace event");
    }
    capacity *= 2;
    buf_.resize(capacity + simdjson::SIMDJSON_PADDING);
  }
  while (end_ < capacity && !eof_) {
    TITAN_ASSIGN_OR_RETURN(size_t k, source_->Read(buf_.data() + end_, capacity - end_));
    if (k == 0) eof_ = true;
    end_ += k;
  }
  std::memset(buf_.data() + end_, ' ', simdjson::SIMDJSON_PADDING);
  return OkStatus();
}

Result<char> JsonStream::PeekNonSpace() {
  while (true) {
    while (pos_ < end_ && IsSpace(buf_[pos_])) ++pos_;
    if (pos_ < end_) return buf_[pos_];
    if (eof_) return '\0';
    TITAN_RETURN_IF_ERROR(Fill());
  }
}

size_t JsonStream::ScanString(size_t at) const {
  const char* b = buf_.data();
  size_t i = at + 1;
  while (i < end_) {
    const void* q = std::memchr(b + i, '"', end_ - i);
    if (q == nullptr) return 0;
    size_t k = static_cast<const char*>(q) - b;
    size_t backslashes = 0;
    while (k - backslashes > at + 1 && b[k - backslashes - 1] == '\\') ++backslashes;
    if (backslashes % 2 == 0) return k + 1;
    i = k + 1;
  }
  return 0;
}

size_t JsonStream::ScanValue(size_t at) const {
  const char* b = buf_.data();
  char c = b[at];
  if (c == '"') return ScanString(at);
  if (c == '{' || c == '[') {
    int depth = 0;
    size_t i = at;
    while (i < end_) {
      char ch = b[i];
      if (ch == '"') {
        size_t e = ScanString(i);
        if (e == 0) return 0;
        i = e;
        continue;
      }
      if (ch == '{' || ch == '[') {
        ++depth;
      } else if (ch == '}' || ch == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return 0;
  }
  size_t i = at;
  while (i < end_ && !EndsScalar(b[i])) ++i;
  if (i == end_ && !eof_) return 0;
  return i;
}

Result<size_t> JsonStream::ValueEnd() {
  while (true) {
    size_t e = ScanValue(pos_);
    if (e != 0) return e;
    if (eof_) {
      return Error(StatusCode::kDataLoss, base_ + end_,
                   "the JSON document ends in the middle of a value (truncated file?); "
                   "re-copy or re-export the trace");
    }
    TITAN_RETURN_IF_ERROR(Fill());
  }
}

Status JsonStream::LocateMalformedEvent(const EventBatchBytes& batch, Status original) const {
  // Find the first event that does not parse on its own, to name its offset. Runs on whichever
  // thread parsed the batch, hence its own parser.
  simdjson::dom::parser parser;
  const std::vector<uint32_t>& begins = batch.element_begin;
  for (size_t i = 0; i < begins.size(); ++i) {
    size_t e_begin = begins[i];
    size_t e_end = i + 1 < begins.size() ? begins[i + 1] : batch.len - 1;  // before ']'
    if (i + 1 < begins.size()) {  // drop the separating comma
      while (e_end > e_begin && batch.json()[e_end - 1] != ',') --e_end;
      if (e_end > e_begin) --e_end;
    }
    std::string one(batch.json() + e_begin, e_end - e_begin);
    simdjson::dom::element ignored;
    if (auto error = parser.parse(one).get(ignored)) {
      return Error(StatusCode::kInvalidArgument, batch.doc_offset + e_begin,
                   fmt::format("malformed JSON in the trace event starting here ({})",
                               simdjson::error_message(error)));
    }
  }
  if (original.message().find(name_) == std::string_view::npos) {
    return original.WithContext(name_);
  }
  return original;
}

void JsonStream::CopyBatch(size_t begin, size_t end) {
  size_t len = end - begin + 2;
  std::vector<char>& bytes = batch_.bytes;
  if (bytes.size() < len + simdjson::SIMDJSON_PADDING) {
    bytes.resize(len + simdjson::SIMDJSON_PADDING);
  }
  bytes[0] = '[';
  std::memcpy(bytes.data() + 1, buf_.data() + begin, end - begin);
  bytes[len - 1] = ']';
  std::memset(bytes.data() + len, ' ', simdjson::SIMDJSON_PADDING);
  batch_.begin = 0;
  batch_.len = len;
  batch_.doc_offset = static_cast<int64_t>(base_ + begin) - 1;
  batch_.element_begin.clear();
}

Status JsonStream::SendBatch(const Handler& handler) {
  if (options_.parse_threads <= 0) {
    TITAN_RETURN_IF_ERROR(HandleBatch(handler, batch_, 0));
    return handler.on_batch_merge(0);
  }
  if (!pipeline_) {
    pipeline_ = std::make_unique<BatchPipeline>(
        options_.parse_threads,
        [this, &handler](const EventBatchBytes& batch, size_t slot) {
          return HandleBatch(handler, batch, slot);
        },
        [&handler](size_t slot) { return handler.on_batch_merge(slot); });
    used_workers_ = true;
  }
  return pipeline_->Submit(&batch_);
}

Status JsonStream::ParseBatch(const Handler& handler) {
  size_t begin = element_begin_.front();
  CopyBatch(begin, batch_end_);
  for (size_t b : element_begin_) {
    batch_.element_begin.push_back(static_cast<uint32_t>(b - begin + 1));
  }
  if (handler.on_batch) return SendBatch(handler);
  simdjson::dom::element root;
  if (parser_.parse(batch_.json(), batch_.len, false).get(root)) {
    return LocateMalformedEvent(batch_, Error(StatusCode::kInvalidArgument, base_ + begin,
                                              "malformed JSON in trace events"));
  }
  simdjson::dom::array events = root.get_array().value_unsafe();
  size_t i = 0;
  for (simdjson::dom::element element : events) {
    OffsetMap map{static_cast<int64_t>(base_ + element_begin_[i])};
    ++i;
    simdjson::dom::object event;
    if (element.get_object().get(event)) {
      return Error(StatusCode::kInvalidArgument, map.begin,
                   "a trace event is not a JSON object; not a profiler trace");
    }
    TITAN_RETURN_IF_ERROR(handler.on_event(event, map));
  }
  return OkStatus();
}

Status JsonStream::HandleBatch(const Handler& handler, const EventBatchBytes& batch,
                               size_t slot) const {
  Status status =
      handler.on_batch(batch.json(), batch.len, batch.capacity(), batch.doc_offset, slot);
  if (!status.ok()) return LocateMalformedEvent(batch, status);
  return OkStatus();
}

std::pair<size_t, size_t> JsonStream::FindLastSeam(bool first) const {
  const char* b = buf_.data();
  auto skip_space = [&](size_t i) {
    while (i < end_ && IsSpace(b[i])) ++i;
    return i;
  };
  size_t start = skip_space(pos_);
  if (!first) {
    if (start >= end_ || b[start] != ',') return {0, 0};
    start = skip_space(start + 1);
  }
  if (start >= end_ || b[start] != '{') return {0, 0};
  const size_t lowest = start + options_.batch_bytes / 2;  // no smaller batches
  for (size_t i = end_; i > lowest;) {
    const void* brace = memrchr(b + lowest, '}', i - lowest);
    if (brace == nullptr) break;
    size_t seam = static_cast<const char*>(brace) - b;
    size_t j = skip_space(seam + 1);
    if (j < end_ && b[j] == ',') {
      j = skip_space(j + 1);
      if (j < end_ && b[j] == '{') return {start, seam};
    }
    i = seam;
  }
  return {0, 0};
}

void JsonStream::HandOverBuffer(size_t start, size_t seam) {
  // What follows the seam moves to a recycled buffer; buf_ becomes the batch in place.
  const size_t tail = end_ - (seam + 1);
  std::vector<char> next = std::move(batch_.bytes);
  next.resize(std::max(options_.batch_bytes, 2 * tail) + simdjson::SIMDJSON_PADDING);
  std::memcpy(next.data(), buf_.data() + seam + 1, tail);
  std::memset(next.data() + tail, ' ', simdjson::SIMDJSON_PADDING);
  batch_.bytes = std::move(buf_);
  batch_.begin = start - 1;
  batch_.bytes[start - 1] = '[';  // over a consumed ',', space or the array's own '['
  batch_.bytes[seam + 1] = ']';   // buf_ always has padding beyond end_ > seam + 2
  std::memset(batch_.bytes.data() + seam + 2, ' ', simdjson::SIMDJSON_PADDING);
  batch_.len = seam + 2 - batch_.begin;
  batch_.doc_offset = static_cast<int64_t>(base_ + start) - 1;
  batch_.element_begin.clear();
  buf_ = std::move(next);
  base_ += seam + 1;
  pos_ = 0;
  end_ = tail;
}

Status JsonStream::CutAtSeams(const Handler& handler, bool* first) {
  while (true) {
    auto [start, seam] = FindLastSeam(*first);
    // Read on while the batch would be small, up to a few batches without a seam.
    while (seam == 0 && !eof_ && end_ - pos_ < 4 * options_.batch_bytes) {
      TITAN_RETURN_IF_ERROR(Fill());
      std::tie(start, seam) = FindLastSeam(*first);
    }
    if (seam == 0) return OkStatus();  // the exact cut goes on from pos_
    if (start > 0) {
      HandOverBuffer(start, seam);
    } else {  // "[{" at the very front of the buffer: no byte to put '[' in
      CopyBatch(start, seam + 1);
      pos_ = seam + 1;
    }
    *first = false;
    seam_cut_used_ = true;
    TITAN_RETURN_IF_ERROR(SendBatch(handler));
  }
}

Status JsonStream::DrainPipeline() { return pipeline_ ? pipeline_->Drain() : OkStatus(); }

Status JsonStream::StreamArray(const Handler& handler) {
  ++pos_;  // '['
  bool first = true;
  if (options_.seam_cut && handler.on_batch) TITAN_RETURN_IF_ERROR(CutAtSeams(handler, &first));
  while (true) {
    // simdjson's stage 1 (SIMD, picked at run time) finds the structural characters of the
    // unread bytes; walking them finds the complete events. The bytes may end inside a string or
    // an event: stage 1 still indexes everything before that, and the incomplete tail is read
    // again after the next Fill().
    size_t region = end_ - pos_;
    // Never cut a UTF-8 sequence: end the region after the last ASCII byte.
    while (!eof_ && region > 0 && static_cast<unsigned char>(buf_[pos_ + region - 1]) >= 0x80) {
      --region;
    }
    if (region > 0) {
      // The scan may be of region + 1 bytes (a closing quote appended, below).
      if (!stage1_ || region + 1 > stage1_capacity_) {
        stage1_capacity_ = std::max(buf_.size(), region + 1);
        if (simdjson::get_active_implementation()->create_dom_parser_implementation(
                stage1_capacity_, 1024, stage1_) != simdjson::SUCCESS) {
          return ResourceExhaustedError("simdjson: cannot allocate the structural scanner");
        }
      }
      // Stage 1 needs the region to end outside a string. A raw newline is never inside a JSON
      // string, so pretty-printed files are cut after their last newline; otherwise, if the
      // region ends inside a string, a closing quote is appended for the scan.
      if (!eof_) {
        const void* nl = memrchr(buf_.data() + pos_ + region / 2, '\n', region - region / 2);
        if (nl != nullptr) region = static_cast<const char*>(nl) - (buf_.data() + pos_) + 1;
      }
      auto scan = [&](size_t len) {
        stage1_->n_structural_indexes = 0;
        return stage1_->stage1(reinterpret_cast<const uint8_t*>(buf_.data() + pos_), len,
                               simdjson::stage1_mode::regular);
      };
      auto error = scan(region);
      if (error == simdjson::UNCLOSED_STRING && !eof_) {
        char saved = buf_[pos_ + region];
        buf_[pos_ + region] = '"';
        error = scan(region + 1);
        buf_[pos_ + region] = saved;
      }
      if (error == simdjson::UNCLOSED_STRING && eof_) {
        return Error(StatusCode::kDataLoss, base_ + end_,
                     "the JSON document ends inside a string (truncated file?); re-copy or "
                     "re-export the trace");
      }
      if (error == simdjson::UTF8_ERROR) {
        return Error(StatusCode::kInvalidArgument, base_ + pos_,
                     "invalid UTF-8 in the trace events after this point; the file is corrupt");
      }
      if (error != simdjson::SUCCESS && stage1_->n_structural_indexes == 0) {
        return Error(StatusCode::kInvalidArgument, base_ + pos_,
                     fmt::format("malformed JSON in the trace events after this point ({})",
                                 simdjson::error_message(error)));
      }
    }
    uint32_t n = region > 0 ? stage1_->n_structural_indexes : 0;
    const uint32_t* idx = region > 0 ? stage1_->structural_indexes.get() : nullptr;
    const size_t origin = pos_;
    element_begin_.clear();
    int depth = 0;
    bool expect_value = first;
    size_t element_start = 0;
    bool finished = false;
    // A structural error is reported after the complete events before it are parsed, so that the
    // first error in the document wins whatever the batch size.
    Status walk_error;
    for (uint32_t k = 0; k < n; ++k) {
      size_t p = origin + idx[k];
      if (p >= end_) break;
      char c = buf_[p];
      if (depth == 0) {
        if (c == ']' && (!expect_value || first)) {
          finished = true;
          pos_ = p + 1;
          break;
        }
        if (c == ',') {
          if (expect_value) {
            walk_error = Error(StatusCode::kInvalidArgument, base_ + p,
                               "malformed JSON: unexpected ',' in the trace events array");
            break;
          }
          expect_value = true;
          continue;
        }
        if (!expect_value) {
          walk_error = Error(StatusCode::kInvalidArgument, base_ + p,
                             fmt::format("malformed JSON: expected ',' or ']' between trace "
                                         "events, found '{}'",
                                         c));
          break;
        }
        if (c != '{') {
          walk_error = Error(StatusCode::kInvalidArgument, base_ + p,
                             "a trace event is not a JSON object; not a profiler trace");
          break;
        }
        element_start = p;
        depth = 1;
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) {
          element_begin_.push_back(element_start);
          batch_end_ = p + 1;
          pos_ = p + 1;
          first = false;
          expect_value = false;
          if (batch_end_ - element_begin_.front() >= options_.batch_bytes) {
            TITAN_RETURN_IF_ERROR(ParseBatch(handler));
            element_begin_.clear();
          }
        }
      }
    }
    if (!element_begin_.empty()) TITAN_RETURN_IF_ERROR(ParseBatch(handler));
    TITAN_RETURN_IF_ERROR(walk_error);
    if (finished) return OkStatus();
    if (eof_) {
      return Error(StatusCode::kDataLoss, base_ + end_,
                   "the JSON document ends inside the trace events array (truncated file?); "
                   "re-copy or re-export the trace");
    }
    TITAN_RETURN_IF_ERROR(Fill());
  }
}

Status JsonStream::Run(const Handler& handler, TopLevel* top_level, bool* saw_events) {
  used_workers_ = false;
  seam_cut_used_ = false;
  Status status = RunDocument(handler, top_level, saw_events);
  // The worker's error, if any, comes from an earlier batch than anything found here since.
  Status worker = DrainPipeline();
  pipeline_.reset();
  return worker.ok() ? status : worker;
}

Status JsonStream::RunDocument(const Handler& handler, TopLevel* top_level, bool* saw_events) {
  *saw_events = false;
  TITAN_ASSIGN_OR_RETURN(char c, PeekNonSpace());
  // A UTF-8 byte order mark is tolerated.
  if (c == '\xEF' && end_ - pos_ >= 3 && std::memcmp(buf_.data() + pos_, "\xEF\xBB\xBF", 3) == 0) {
    pos_ += 3;
    TITAN_ASSIGN_OR_RETURN(c, PeekNonSpace());
  }
  if (c == '[') {
    *top_level = TopLevel::kArray;
    *saw_events = true;
    if (handler.on_top_level) TITAN_RETURN_IF_ERROR(handler.on_top_level(TopLevel::kArray));
    return StreamArray(handler);
  }
  if (c != '{') {
    if (c == '\0') return Error(StatusCode::kInvalidArgument, base_ + pos_, "the file is empty");
    return Error(StatusCode::kInvalidArgument, base_ + pos_,
                 "not a JSON profiler trace: expected '{' (Kineto trace) or '[' (legacy autograd "
                 "profiler trace)");
  }
  *top_level = TopLevel::kObject;
  if (handler.on_top_level) TITAN_RETURN_IF_ERROR(handler.on_top_level(TopLevel::kObject));
  ++pos_;
  bool first = true;
  while (true) {
    TITAN_ASSIGN_OR_RETURN(c, PeekNonSpace());
    if (c == '}') {
      ++pos_;
      return OkStatus();
    }
    if (!first) {
      if (c != ',') {
        if (c == '\0') {
          return Error(StatusCode::kDataLoss, base_ + pos_,
                       "the JSON document ends early (truncated file?)");
        }
        return Error(
            StatusCode::kInvalidArgument, base_ + pos_,
            fmt::format("malformed JSON: expected ',' or '}}' between members, found '{}'", c));
      }
      ++pos_;
      TITAN_ASSIGN_OR_RETURN(c, PeekNonSpace());
    }
    first = false;
    if (c != '"') {
      if (c == '\0') {
        return Error(StatusCode::kDataLoss, base_ + pos_,
                     "the JSON document ends early (truncated file?)");
      }
      return Error(StatusCode::kInvalidArgument, base_ + pos_,
                   fmt::format("malformed JSON: expected a member name, found '{}'", c));
    }
    TITAN_ASSIGN_OR_RETURN(size_t key_end, ValueEnd());
    std::string key(buf_.data() + pos_ + 1, key_end - pos_ - 2);
    pos_ = key_end;
    TITAN_ASSIGN_OR_RETURN(c, PeekNonSpace());
    if (c != ':') {
      return Error(c == '\0' ? StatusCode::kDataLoss : StatusCode::kInvalidArgument, base_ + pos_,
                   fmt::format("malformed JSON: expected ':' after \"{}\"", key));
    }
    ++pos_;
    TITAN_ASSIGN_OR_RETURN(c, PeekNonSpace());
    if (c == '\0') {
      return Error(StatusCode::kDataLoss, base_ + pos_,
                   "the JSON document ends early (truncated file?)");
    }
    if (key == "traceEvents") {
      if (c != '[') {
        return Error(StatusCode::kInvalidArgument, base_ + pos_,
                     "\"traceEvents\" is not an array; not a PyTorch profiler trace");
      }
      *saw_events = true;
      TITAN_RETURN_IF_ERROR(StreamArray(handler));
      continue;
    }
    TITAN_ASSIGN_OR_RETURN(size_t value_end, ValueEnd());
    size_t len = value_end - pos_;
    uint64_t at = base_ + pos_;
    if (!handler.on_member) {
      pos_ = value_end;
      continue;
    }
    std::string member(buf_.data() + pos_, len);
    pos_ = value_end;
    simdjson::dom::element value;
    if (auto error = parser_.parse(member).get(value)) {
      return Error(
          StatusCode::kInvalidArgument, at,
          fmt::format("malformed JSON in member \"{}\" ({})", key, simdjson::error_message(error)));
    }
    TITAN_RETURN_IF_ERROR(DrainPipeline());  // on_member never runs beside on_batch
    TITAN_RETURN_IF_ERROR(handler.on_member(key, value, OffsetMap{static_cast<int64_t>(at)}));
  }
}

}  // namespace titan::trace
