#include "src/checkpoint/direct_writable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "src/checkpoint/posix_error.h"

namespace titan::checkpoint {
namespace {

struct AlignedFree {
  void operator()(char* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<char, AlignedFree>;

uint64_t RoundUp(uint64_t v) {
  return (v + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
}

class DirectWritableFile final : public WritableFile {
 public:
  DirectWritableFile(int fd, std::string full_path, DirectFileOptions options,
                     std::vector<AlignedBuffer> buffers)
      : fd_(fd), full_path_(std::move(full_path)), options_(options), buffers_(std::move(buffers)) {
    for (size_t i = 1; i < buffers_.size(); ++i) free_.push_back(i);
    io_thread_ = std::thread([this] { WriteLoop(); });
  }

  ~DirectWritableFile() override { Close().IgnoreError(); }

  Status Append(const void* data, size_t size_bytes) override {
    TITAN_RETURN_IF_ERROR(Error());  // after a failed write nothing more is accepted
    const char* p = static_cast<const char*>(data);
    while (size_bytes > 0) {
      const size_t n = std::min(size_bytes, options_.buffer_bytes - fill_);
      std::memcpy(buffers_[current_].get() + fill_, p, n);
      fill_ += n;
      size_ += n;
      p += n;
      size_bytes -= n;
      if (fill_ == options_.buffer_bytes) {
        TITAN_RETURN_IF_ERROR(SubmitCurrent(/*keep=*/false));
      } else if (Status e = Error(); !e.ok()) {
        return e;
      }
    }
    return OkStatus();
  }

  Status Sync() override {
    TITAN_RETURN_IF_ERROR(Flush());
    if (::fdatasync(fd_) != 0) return PathError(errno, "fsync", full_path_);
    return OkStatus();
  }

  Status Close() override {
    if (fd_ < 0) return OkStatus();
    Status status = Flush();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    io_thread_.join();
    if (::close(fd_) != 0 && status.ok()) status = PathError(errno, "close", full_path_);
    fd_ = -1;
    return status;
  }

  uint64_t size_bytes() const override { return size_; }

 private:
  struct Write {
    size_t buffer;
    uint64_t offset;
    size_t size;   // a multiple of kDirectAlignment
    bool release;  // return the buffer to the free list when written
  };

  Status Error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

  // Queues the current buffer for writing. keep=false: the caller moves on to a free buffer
  // (waiting for one); keep=true (a partial block at Sync): the buffer stays current, and the
  // caller waits until it is written before touching it again.
  Status SubmitCurrent(bool keep) {
    const size_t size = RoundUp(fill_);
    std::memset(buffers_[current_].get() + fill_, 0, size - fill_);  // padding of the last block
    std::unique_lock<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
    queue_.push_back(Write{current_, buffer_offset_, size, !keep});
    ++pending_;
    cv_.notify_all();
    if (keep) return OkStatus();
    cv_.wait(lock, [this] { return !free_.empty() || !error_.ok(); });
    if (!error_.ok()) return error_;
    current_ = free_.front();
    free_.pop_front();
    buffer_offset_ += fill_;
    fill_ = 0;
    return OkStatus();
  }

  // Writes everything appended so far; the file's size is then exactly size_.
  Status Flush() {
    if (fill_ > 0) TITAN_RETURN_IF_ERROR(SubmitCurrent(/*keep=*/true));
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return pending_ == 0; });
    if (!error_.ok()) return error_;
    lock.unlock();
    if (fill_ % kDirectAlignment != 0 && ::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
      return PathError(errno, fmt::format("truncate to {} bytes", size_), full_path_);
    }
    return OkStatus();
  }

  void WriteLoop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      const Write w = queue_.front();
      queue_.pop_front();
      const bool failed = !error_.ok();
      lock.unlock();
      Status status = failed ? OkStatus() : WriteFully(w);
      lock.lock();
      if (!status.ok() && error_.ok()) error_ = status;
      if (w.release) free_.push_back(w.buffer);
      --pending_;
      cv_.notify_all();
    }
  }

  Status WriteFully(const Write& w) {
    const char* p = buffers_[w.buffer].get();
    uint64_t at = w.offset;
    size_t left = w.size;
    while (left > 0) {
      ssize_t n = ::pwrite(fd_, p, left, static_cast<off_t>(at));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EINVAL && !buffered_) {
        // The file system accepted O_DIRECT at open but not this write: write buffered.
        int flags = ::fcntl(fd_, F_GETFL);
        if (flags >= 0 && ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) == 0) {
          buffered_ = true;
          continue;
        }
        errno = EINVAL;
      }
      if (n < 0) return PathError(errno, fmt::format("write at byte {} of", at), full_path_);
      if (n == 0) return PathError(EIO, fmt::format("write at byte {} of", at), full_path_);
      p += n;
      at += static_cast<uint64_t>(n);
      left -= static_cast<size_t>(n);
    }
    return OkStatus();
  }

  int fd_;
  const std::string full_path_;
  const DirectFileOptions options_;
  std::vector<AlignedBuffer> buffers_;

  // Caller thread only.
  size_t current_ = 0;          // buffer being filled
  size_t fill_ = 0;             // bytes in it
  uint64_t buffer_offset_ = 0;  // file offset of its first byte (aligned)
  uint64_t size_ = 0;           // bytes appended
  bool buffered_ = false;       // I/O thread only: O_DIRECT was cleared

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Write> queue_;  // guarded by mu_
  std::deque<size_t> free_;  // guarded by mu_: buffers not current and not queued
  size_t pending_ = 0;       // guarded by mu_: queued or being written
  Status error_;             // guarded by mu_: the first write error
  bool stopping_ = false;    // guarded by mu_
  std::thread io_thread_;
};

}  // namespace

Result<std::unique_ptr<WritableFile>> OpenDirectWritableFile(const std::string& full_path,
                                                             DirectFileOptions options) {
  if (options.buffer_bytes == 0 || options.buffer_bytes % kDirectAlignment != 0 ||
      options.buffers < 2) {
    return InvalidArgumentError(
        fmt::format("direct file buffers must be >= 2 multiples of {} bytes (got {} x {})",
                    kDirectAlignment, options.buffers, options.buffer_bytes));
  }
  int fd = ::open(full_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_DIRECT, 0644);
  if (fd < 0 && errno == EINVAL) return std::unique_ptr<WritableFile>();
  if (fd < 0) return PathError(errno, "create", full_path);
  std::vector<AlignedBuffer> buffers;
  for (size_t i = 0; i < options.buffers; ++i) {
    void* p = nullptr;
    if (::posix_memalign(&p, kDirectAlignment, options.buffer_bytes) != 0) {
      ::close(fd);
      return ResourceExhaustedError(fmt::format("cannot allocate {} bytes of write buffers for {}",
                                                options.buffers * options.buffer_bytes, full_path));
    }
    buffers.emplace_back(static_cast<char*>(p));
  }
  return std::unique_ptr<WritableFile>(
      new DirectWritableFile(fd, full_path, options, std::move(buffers)));
}

}  // namespace titan::checkpoint
