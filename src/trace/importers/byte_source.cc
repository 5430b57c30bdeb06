#include "src/trace/importers/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace titan::trace {
namespace {

constexpr size_t kCompressedChunkBytes = 1 << 20;

// Raw bytes: a file descriptor or a memory block.
class RawInput {
 public:
  virtual ~RawInput() = default;
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
};

class FdInput : public RawInput {
 public:
  FdInput(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FdInput() override { ::close(fd_); }
  Result<size_t> Read(char* buf, size_t n) override {
    while (true) {
      ssize_t r = ::read(fd_, buf, n);
      if (r >= 0) return static_cast<size_t>(r);
      if (errno != EINTR) return ErrnoError(errno, fmt::format("reading trace file {}", path_));
    }
  }

 private:
  int fd_;
  std::string path_;
};

class MemInput : public RawInput {
 public:
  explicit MemInput(std::string_view data) : data_(data) {}
  Result<size_t> Read(char* buf, size_t n) override {
    size_t k = std::min(n, data_.size() - pos_);
    std::memcpy(buf, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// The first bytes are read ahead for format detection and replayed.
class PlainSource : public ByteSource {
 public:
  PlainSource(std::unique_ptr<RawInput> in, std::string head)
      : in_(std::move(in)), head_(std::move(head)) {}
  Result<size_t> Read(char* buf, size_t n) override {
    if (head_pos_ < head_.size()) {
      size_t k = std::min(n, head_.size() - head_pos_);
      std::memcpy(buf, head_.data() + head_pos_, k);
      head_pos_ += k;
      offset_ += k;
      return k;
    }
    TITAN_ASSIGN_OR_RETURN(size_t k, in_->Read(buf, n));
    offset_ += k;
    return k;
  }
  uint64_t file_offset() const override { return offset_; }
  bool gzipped() const override { return false; }

 private:
  std::unique_ptr<RawInput> in_;
  std::string head_;
  size_t head_pos_ = 0;
  uint64_t offset_ = 0;
};

// gzip members parsed here and inflated raw: zlib's gzip wrapper would also compute a CRC-32
// over every byte (about 10% of the time); the ISIZE trailer is still checked.
class GzipSource : public ByteSource {
 public:
  GzipSource(std::unique_ptr<RawInput> in, std::string head, std::string name)
      : in_(std::move(in)), name_(std::move(name)), buf_(kCompressedChunkBytes) {
    std::memset(&zs_, 0, sizeof(zs_));
    init_ok_ = inflateInit2(&zs_, -15) == Z_OK;
    std::memcpy(buf_.data(), head.data(), head.size());
    avail_ = head.size();
    read_ = head.size();
  }
  ~GzipSource() override { inflateEnd(&zs_); }

  Result<size_t> Read(char* out, size_t n) override {
    if (!init_ok_) return InternalError("zlib inflateInit2 failed");
    size_t produced = 0;
    while (produced < n && state_ != State::kDone) {
      if (state_ == State::kHeader) {
        TITAN_RETURN_IF_ERROR(ParseHeader());
        continue;
      }
      if (state_ == State::kTrailer) {
        TITAN_RETURN_IF_ERROR(ParseTrailer());
        continue;
      }
      if (avail_ == 0) TITAN_RETURN_IF_ERROR(Refill(1));
      zs_.next_in = reinterpret_cast<Bytef*>(buf_.data() + pos_);
      zs_.avail_in = static_cast<uInt>(avail_);
      zs_.next_out = reinterpret_cast<Bytef*>(out + produced);
      zs_.avail_out = static_cast<uInt>(std::min<size_t>(n - produced, UINT32_MAX));
      uInt out_before = zs_.avail_out;
      int rc = inflate(&zs_, Z_NO_FLUSH);
      size_t used = avail_ - zs_.avail_in;
      pos_ += used;
      avail_ -= used;
      produced += out_before - zs_.avail_out;
      member_out_ += out_before - zs_.avail_out;
      if (rc == Z_STREAM_END) {
        state_ = State::kTrailer;
      } else if (rc == Z_BUF_ERROR && avail_ == 0 && input_eof_) {
        return Truncated();
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return DataLossError(fmt::format(
            "{}: corrupt gzip data near compressed byte {} ({}); re-copy or re-export the trace",
            name_, read_ - avail_, zs_.msg ? zs_.msg : "inflate error"));
      }
    }
    return produced;
  }
  uint64_t file_offset() const override { return read_ - avail_; }
  bool gzipped() const override { return true; }

 private:
  enum class State { kHeader, kBody, kTrailer, kDone };

  Status Truncated() const {
    return DataLossError(fmt::format(
        "{}: gzip stream is truncated at compressed byte {} (after {} uncompressed bytes); the "
        "file was cut short while being written or copied: re-copy or re-export it",
        name_, read_, zs_.total_out));
  }

  // Makes at least `want` unread bytes available (fewer only at end of file).
  Status Refill(size_t want) {
    if (pos_ > 0) {
      std::memmove(buf_.data(), buf_.data() + pos_, avail_);
      pos_ = 0;
    }
    if (want > buf_.size()) buf_.resize(want);
    while (avail_ < want && !input_eof_) {
      TITAN_ASSIGN_OR_RETURN(size_t k, in_->Read(buf_.data() + avail_, buf_.size() - avail_));
      if (k == 0) input_eof_ = true;
      avail_ += k;
      read_ += k;
    }
    return OkStatus();
  }

  Status ParseHeader() {
    TITAN_RETURN_IF_ERROR(Refill(64 << 10));
    const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + pos_);
    size_t len = avail_, i = 10;
    if (len < 10) return Truncated();
    if (p[0] != 0x1f || p[1] != 0x8b || p[2] != 8) {
      return DataLossError(fmt::format(
          "{}: corrupt gzip header at compressed byte {}; re-copy or re-export the trace", name_,
          read_ - avail_));
    }
    unsigned flags = p[3];
    if (flags & 4) {  // FEXTRA
      if (len < i + 2) return Truncated();
      i += 2 + (p[i] | (p[i + 1] << 8));
    }
    for (unsigned bit : {8u, 16u}) {  // FNAME, FCOMMENT: zero-terminated
      if (!(flags & bit)) continue;
      while (i < len && p[i] != 0) ++i;
      ++i;
    }
    if (flags & 2) i += 2;  // FHCRC
    if (i > len) return Truncated();
    pos_ += i;
    avail_ -= i;
    member_out_ = 0;
    inflateReset(&zs_);
    state_ = State::kBody;
    return OkStatus();
  }

  Status ParseTrailer() {
    TITAN_RETURN_IF_ERROR(Refill(8));
    if (avail_ < 8) return Truncated();
    const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + pos_);
    uint32_t isize = p[4] | (p[5] << 8) | (p[6] << 16) | (static_cast<uint32_t>(p[7]) << 24);
    if (isize != static_cast<uint32_t>(member_out_)) {
      return DataLossError(fmt::format(
          "{}: gzip size check failed (trailer says {} bytes mod 2^32, inflated {}); the file is "
          "corrupt: re-copy or re-export it",
          name_, isize, member_out_));
    }
    pos_ += 8;
    avail_ -= 8;
    // Another member may follow (concatenated gzip); zero padding is tolerated.
    TITAN_RETURN_IF_ERROR(Refill(1));
    while (avail_ > 0 && buf_[pos_] == 0) {
      ++pos_;
      --avail_;
      if (avail_ == 0) TITAN_RETURN_IF_ERROR(Refill(1));
    }
    state_ = avail_ == 0 ? State::kDone : State::kHeader;
    return OkStatus();
  }

  std::unique_ptr<RawInput> in_;
  std::string name_;
  std::vector<char> buf_;
  size_t pos_ = 0, avail_ = 0;  // unread compressed bytes are buf_[pos_, pos_ + avail_)
  z_stream zs_;
  State state_ = State::kHeader;
  bool init_ok_ = false;
  bool input_eof_ = false;
  uint64_t read_ = 0;        // compressed bytes read from the file
  uint64_t member_out_ = 0;  // uncompressed bytes of the current member
};

Result<std::unique_ptr<ByteSource>> Wrap(std::unique_ptr<RawInput> in, const std::string& name) {
  std::string head(2, '\0');
  size_t got = 0;
  while (got < 2) {
    TITAN_ASSIGN_OR_RETURN(size_t k, in->Read(head.data() + got, 2 - got));
    if (k == 0) break;
    got += k;
  }
  head.resize(got);
  if (got == 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b) {
    return std::unique_ptr<ByteSource>(new GzipSource(std::move(in), std::move(head), name));
  }
  return std::unique_ptr<ByteSource>(new PlainSource(std::move(in), std::move(head)));
}

}  // namespace

Result<std::unique_ptr<ByteSource>> OpenTraceFile(const std::string& path) {
  TITAN_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path, "trace"));
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return Wrap(std::make_unique<FdInput>(fd, path), path);
}

std::unique_ptr<ByteSource> MemorySource(std::string_view data, std::string name) {
  auto r = Wrap(std::make_unique<MemInput>(data), name);
  return std::move(r).value();  // memory reads cannot fail
}

}  // namespace titan::trace
