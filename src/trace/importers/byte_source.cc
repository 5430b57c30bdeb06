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

class GzipSource : public ByteSource {
 public:
  GzipSource(std::unique_ptr<RawInput> in, std::string head, std::string name)
      : in_(std::move(in)), name_(std::move(name)), buf_(kCompressedChunkBytes) {
    std::memset(&zs_, 0, sizeof(zs_));
    init_ok_ = inflateInit2(&zs_, 15 + 16) == Z_OK;
    std::memcpy(buf_.data(), head.data(), head.size());
    zs_.next_in = reinterpret_cast<Bytef*>(buf_.data());
    zs_.avail_in = static_cast<uInt>(head.size());
    read_ = head.size();
  }
  ~GzipSource() override { inflateEnd(&zs_); }

  Result<size_t> Read(char* out, size_t n) override {
    if (!init_ok_) return InternalError("zlib inflateInit2 failed");
    if (done_) return size_t{0};
    zs_.next_out = reinterpret_cast<Bytef*>(out);
    zs_.avail_out = static_cast<uInt>(std::min<size_t>(n, UINT32_MAX));
    while (zs_.avail_out > 0) {
      if (zs_.avail_in == 0 && !input_eof_) {
        TITAN_ASSIGN_OR_RETURN(size_t k, in_->Read(buf_.data(), buf_.size()));
        if (k == 0) {
          input_eof_ = true;
        } else {
          read_ += k;
          zs_.next_in = reinterpret_cast<Bytef*>(buf_.data());
          zs_.avail_in = static_cast<uInt>(k);
        }
      }
      int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        // Another member may follow (concatenated gzip); skip zero padding.
        while (zs_.avail_in > 0 && *zs_.next_in == 0) {
          ++zs_.next_in;
          --zs_.avail_in;
        }
        if (zs_.avail_in == 0 && !input_eof_) {
          TITAN_ASSIGN_OR_RETURN(size_t k, in_->Read(buf_.data(), buf_.size()));
          if (k == 0) input_eof_ = true;
          read_ += k;
          zs_.next_in = reinterpret_cast<Bytef*>(buf_.data());
          zs_.avail_in = static_cast<uInt>(k);
        }
        if (zs_.avail_in == 0) {
          done_ = true;
          break;
        }
        inflateReset(&zs_);
        continue;
      }
      if (rc == Z_BUF_ERROR && zs_.avail_in == 0 && input_eof_) {
        return DataLossError(fmt::format(
            "{}: gzip stream is truncated at compressed byte {} (after {} uncompressed bytes); "
            "the file was cut short while being written or copied: re-copy or re-export it",
            name_, read_, zs_.total_out));
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        uint64_t at = read_ - zs_.avail_in;
        return DataLossError(fmt::format(
            "{}: corrupt gzip data near compressed byte {} ({}); re-copy or re-export the trace",
            name_, at, zs_.msg ? zs_.msg : "inflate error"));
      }
    }
    return n - zs_.avail_out;
  }
  uint64_t file_offset() const override { return read_ - zs_.avail_in; }
  bool gzipped() const override { return true; }

 private:
  std::unique_ptr<RawInput> in_;
  std::string name_;
  std::vector<char> buf_;
  z_stream zs_;
  bool init_ok_ = false;
  bool input_eof_ = false;
  bool done_ = false;
  uint64_t read_ = 0;
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
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, fmt::format("opening trace file {}", path));
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError(fmt::format("{} is a directory, expected a trace file", path));
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return Wrap(std::make_unique<FdInput>(fd, path), path);
}

std::unique_ptr<ByteSource> MemorySource(std::string_view data, std::string name) {
  auto r = Wrap(std::make_unique<MemInput>(data), name);
  return std::move(r).value();  // memory reads cannot fail
}

}  // namespace titan::trace
