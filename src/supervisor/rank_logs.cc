#include "src/supervisor/rank_logs.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/log.h"

namespace titan::supervisor {
namespace {

constexpr size_t kReadBytes = 64 * 1024;
constexpr int kPipeBytes = 1 << 20;  // asked of the kernel for each pipe (it may give less)

std::string IsoNow() {
  const int64_t ns = WallNowNs();
  std::time_t s = static_cast<std::time_t>(ns / kNsPerSecond);
  std::tm tm{};
  gmtime_r(&s, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (ns % kNsPerSecond) / kNsPerMs);
}

int OpenLog(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
}

}  // namespace

struct RankLogs::Stream {
  struct End {
    Stream* stream;
    int which;  // 0 stdout, 1 stderr
  };
  int rank = 0, local_rank = 0;
  int64_t generation = 0;
  int read_fd[2] = {-1, -1};
  int write_fd[2] = {-1, -1};  // the parent's copies, until Started
  End ends[2];
  std::string head_path, tail_path;
  int head_fd = -1, tail_fd = -1;
  int64_t head_written = 0, tail_written = 0;
  bool head_full = false;
  bool disk_warned = false;
  // Output read before Started() wrote the header (the worker runs as soon as it is forked):
  // held here, at most kEarlyBytes, so that the header is the file's first line.
  bool started = false;
  std::string early;
  bool Closed() const { return read_fd[0] < 0 && read_fd[1] < 0; }
  // The worker has its own copies of the write ends (or will never run): only they keep the
  // pipes open from now on.
  void CloseWriteEnds() {
    for (int& fd : write_fd) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
};

RankLogs::RankLogs(RankLogOptions options) : options_(std::move(options)) {
  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  reader_ = std::thread([this] { ReadLoop(); });
  if (options_.tee) terminal_ = std::thread([this] { TerminalLoop(); });
}

RankLogs::~RankLogs() {
  stop_ = true;
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  reader_.join();
  {
    std::lock_guard<std::mutex> lock(term_mu_);
    term_stop_ = true;
  }
  term_cv_.notify_all();
  if (terminal_.joinable()) terminal_.join();
  for (auto& s : streams_) {
    if (!s->started) FlushEarly(*s);  // a worker never reported started: keep what it wrote
    for (int fd : s->read_fd) {
      if (fd >= 0) ::close(fd);
    }
    s->CloseWriteEnds();
    if (s->head_fd >= 0) ::close(s->head_fd);
    if (s->tail_fd >= 0) ::close(s->tail_fd);
  }
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

Result<WorkerPipes> RankLogs::Open(int rank, int local_rank, int64_t generation) {
  auto s = std::make_unique<Stream>();
  s->rank = rank;
  s->local_rank = local_rank;
  s->generation = generation;
  s->head_path = fmt::format("{}/rank-{}.gen{}.log", options_.dir, rank, generation);
  s->tail_path = fmt::format("{}/rank-{}.gen{}.tail.log", options_.dir, rank, generation);
  s->head_fd = OpenLog(s->head_path);
  if (s->head_fd < 0) return ErrnoError(errno, "creating the rank log " + s->head_path);
  for (int i = 0; i < 2; ++i) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      const int err = errno;
      for (int j = 0; j < i; ++j) ::close(s->read_fd[j]), ::close(s->write_fd[j]);
      ::close(s->head_fd);
      return ErrnoError(err, "pipe2 for a worker's output");
    }
    // Only our end is non-blocking: the worker's writes block as ever when the pipe is full.
    ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    ::fcntl(fds[0], F_SETPIPE_SZ, kPipeBytes);
    s->read_fd[i] = fds[0];
    s->write_fd[i] = fds[1];
    s->ends[i] = {s.get(), i};
  }
  WorkerPipes pipes{s->write_fd[0], s->write_fd[1]};
  Stream* raw = s.get();
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.push_back(std::move(s));
  }
  for (int i = 0; i < 2; ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = &raw->ends[i];
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, raw->read_fd[i], &ev);
  }
  return pipes;
}

void RankLogs::Started(int rank, int64_t generation, pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : streams_) {
    if (s->rank != rank || s->generation != generation) continue;
    s->CloseWriteEnds();
    const std::string header =
        fmt::format("[titan run] rank {} (local rank {}) pid {} generation {} started {}\n", rank,
                    s->local_rank, pid, generation, IsoNow());
    WriteDisk(*s, header.data(), header.size());
    FlushEarly(*s);
  }
}

void RankLogs::FlushEarly(Stream& s) {
  s.started = true;
  std::string early;
  early.swap(s.early);
  if (!early.empty()) WriteDisk(s, early.data(), early.size());
}

void RankLogs::Abandon(int rank, int64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : streams_) {
    if (s->rank == rank && s->generation == generation) {
      s->CloseWriteEnds();
      FlushEarly(*s);
    }
  }
}

void RankLogs::Drain(int64_t generation, int64_t timeout_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  drained_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [&] {
    for (const auto& s : streams_) {
      if (s->generation == generation && !s->Closed()) return false;
    }
    return true;
  });
}

std::vector<std::string> RankLogs::Files(int64_t generation) const {
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : streams_) {
    if (s->generation != generation) continue;
    for (const std::string& p : {s->head_path, s->tail_path + ".1", s->tail_path}) {
      struct stat st;
      if (::stat(p.c_str(), &st) == 0) out.push_back(p);
    }
  }
  return out;
}

RankLogs::Stats RankLogs::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

// The head keeps the first quarter of the bound; the tail the most recent output, in two
// rotating halves of the rest. Called with mu_ held.
void RankLogs::WriteDisk(Stream& s, const char* data, size_t n) {
  const int64_t head_bound = options_.max_bytes / 4;
  const int64_t tail_half = std::max<int64_t>((options_.max_bytes - head_bound) / 2, 1);
  auto put = [&](int fd, const char* p, size_t len) {
    ssize_t w = ::write(fd, p, len);
    if (w == static_cast<ssize_t>(len)) return true;
    stats_.bytes_on_disk_dropped += static_cast<int64_t>(len) - std::max<ssize_t>(w, 0);
    if (!s.disk_warned) {
      s.disk_warned = true;
      Log(LogLevel::kWarning, "run", "rank {} log: {} (output dropped and counted)", s.rank,
          w < 0 ? strerror(errno) : "short write");
    }
    return false;
  };
  if (!s.head_full) {
    size_t room = static_cast<size_t>(std::max<int64_t>(head_bound - s.head_written, 0));
    size_t take = std::min(n, room);
    if (take < n && take > 0) {
      // End the head at a line boundary where one is near, so no line is split across files.
      const void* nl = memrchr(data, '\n', take);
      if (nl != nullptr) take = static_cast<const char*>(nl) - data + 1;
    }
    if (take > 0 && put(s.head_fd, data, take)) s.head_written += static_cast<int64_t>(take);
    data += take;
    n -= take;
    if (n == 0) return;
    s.head_full = true;
    const std::string note = fmt::format(
        "\n[titan run] the first {} bytes of this rank's output are above; its most recent "
        "output is in {} (older parts rotate away)\n",
        s.head_written, std::filesystem::path(s.tail_path).filename().string());
    put(s.head_fd, note.data(), note.size());
  }
  if (s.tail_fd >= 0 && s.tail_written + static_cast<int64_t>(n) > tail_half) {
    ::close(s.tail_fd);
    struct stat st;
    if (::stat((s.tail_path + ".1").c_str(), &st) == 0) stats_.bytes_rotated_out += st.st_size;
    std::rename(s.tail_path.c_str(), (s.tail_path + ".1").c_str());
    s.tail_fd = -1;
  }
  if (s.tail_fd < 0) {
    s.tail_fd = OpenLog(s.tail_path);
    s.tail_written = 0;
    if (s.tail_fd < 0) {
      stats_.bytes_on_disk_dropped += static_cast<int64_t>(n);
      return;
    }
  }
  // A single write larger than half the tail keeps its end.
  if (static_cast<int64_t>(n) > tail_half) {
    stats_.bytes_rotated_out += static_cast<int64_t>(n) - tail_half;
    data += n - static_cast<size_t>(tail_half);
    n = static_cast<size_t>(tail_half);
  }
  if (put(s.tail_fd, data, n)) s.tail_written += static_cast<int64_t>(n);
}

void RankLogs::Consume(Stream& s, int which, const char* data, size_t n) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.bytes_read += static_cast<int64_t>(n);
    if (!s.started && s.early.size() + n <= kEarlyBytes) {
      s.early.append(data, n);
    } else {
      // More than kEarlyBytes before Started(): written now, the header will follow it.
      if (!s.started) FlushEarly(s);
      WriteDisk(s, data, n);
    }
  }
  if (!options_.tee) return;
  std::lock_guard<std::mutex> lock(term_mu_);
  if (term_queued_ + n > options_.terminal_queue_bytes) {
    std::lock_guard<std::mutex> stats_lock(mu_);
    stats_.terminal_bytes_dropped += static_cast<int64_t>(n);
    return;
  }
  term_queue_.emplace_back(which == 0 ? STDOUT_FILENO : STDERR_FILENO, std::string(data, n));
  term_queued_ += n;
  term_cv_.notify_one();
}

void RankLogs::ReadLoop() {
  std::vector<char> buf(kReadBytes);
  epoll_event events[64];
  while (true) {
    const int n = ::epoll_wait(epoll_fd_, events, 64, 100);
    bool idle = true;
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) continue;  // the wake-up
      auto* end = static_cast<Stream::End*>(events[i].data.ptr);
      Stream& s = *end->stream;
      const int fd = s.read_fd[end->which];
      if (fd < 0) continue;
      idle = false;
      // At most a few reads per wake-up: one chatty rank does not starve the others.
      for (int round = 0; round < 16; ++round) {
        const ssize_t got = ::read(fd, buf.data(), buf.size());
        if (got > 0) {
          Consume(s, end->which, buf.data(), static_cast<size_t>(got));
          continue;
        }
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) break;
        // End of file (or an error): this end is done.
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
        std::lock_guard<std::mutex> lock(mu_);
        s.read_fd[end->which] = -1;
        if (s.Closed()) {
          if (s.head_fd >= 0) ::fsync(s.head_fd);
          drained_.notify_all();
        }
        break;
      }
    }
    if (stop_ && (n <= 0 || idle)) break;
  }
}

void RankLogs::TerminalLoop() {
  while (true) {
    std::pair<int, std::string> chunk;
    {
      std::unique_lock<std::mutex> lock(term_mu_);
      term_cv_.wait(lock, [&] { return term_stop_ || !term_queue_.empty(); });
      if (term_queue_.empty()) return;
      chunk = std::move(term_queue_.front());
      term_queue_.pop_front();
      term_queued_ -= chunk.second.size();
    }
    const int fd = chunk.first;
    size_t done = 0;
    while (done < chunk.second.size()) {
      const ssize_t w = ::write(fd, chunk.second.data() + done, chunk.second.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;  // a closed terminal: the rest is dropped
      done += static_cast<size_t>(w);
    }
  }
}

}  // namespace titan::supervisor
