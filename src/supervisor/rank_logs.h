// RankLogs: each worker's stdout and stderr, read from pipes by one thread and written to the run
// directory (what titan diagnose reads after a failure), and still shown on titan run's own
// stdout/stderr, as torchrun's --tee does.
//
// Bounded: per rank and generation at most `max_bytes` (default 64 MiB) stay on disk: the first
// quarter whole in rank-<R>.gen<G>.log (the start: the configuration, the first errors), the rest
// as the most recent output in rank-<R>.gen<G>.tail.log, which rotates to .tail.log.1 each time it
// reaches half of what is left, so the end is always there. A worker is never blocked by its log:
// the pipes are read without blocking; a write the disk refuses (full) is dropped and counted, and
// the terminal gets a bounded queue of its own (a terminal that does not keep up loses output, not
// the worker). Each log starts with a line "[titan run] rank R (local rank L) pid P generation G
// started <ISO time>", which titan diagnose reads for the rank and the clock of the lines after it.
//
// Thread safety: Open/Drain/Files/stats from the supervisor's thread; the reader and terminal
// threads are internal.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/base/status.h"

namespace titan::supervisor {

struct RankLogOptions {
  std::string dir;                        // created if missing
  int64_t max_bytes = int64_t{64} << 20;  // per rank and generation on disk
  bool tee = true;                        // also to titan run's stdout / stderr
  size_t terminal_queue_bytes = 4 << 20;  // beyond this, terminal output is dropped
};

// The write ends a worker gets as its stdout and stderr (close-on-exec in the parent; the child
// dup2s them onto 1 and 2).
struct WorkerPipes {
  int stdout_fd = -1;
  int stderr_fd = -1;
};

class RankLogs {
 public:
  explicit RankLogs(RankLogOptions options);
  ~RankLogs();  // stops the threads; output still in the pipes is read first (bounded wait)
  RankLogs(const RankLogs&) = delete;
  RankLogs& operator=(const RankLogs&) = delete;

  // Makes the pipes and the log file of a worker about to be spawned. Call Started() with its pid
  // once it runs (or Abandon() if the spawn failed).
  Result<WorkerPipes> Open(int rank, int local_rank, int64_t generation);
  // Closes the parent's copies of the write ends and writes the header line.
  void Started(int rank, int64_t generation, pid_t pid);
  void Abandon(int rank, int64_t generation);
  // Waits up to `timeout_ns` for every pipe of `generation` to reach end of file (its workers and
  // their children exited), so that the files hold everything they wrote.
  void Drain(int64_t generation, int64_t timeout_ns);
  // The log files of `generation` (head and tail files that exist).
  std::vector<std::string> Files(int64_t generation) const;

  struct Stats {
    int64_t bytes_read = 0;
    int64_t bytes_on_disk_dropped = 0;  // refused by the disk (full), or beyond a file's bound
    int64_t bytes_rotated_out = 0;      // old tail output rotated away
    int64_t terminal_bytes_dropped = 0;
  };
  Stats stats() const;
  const std::string& dir() const { return options_.dir; }
  int64_t max_bytes() const { return options_.max_bytes; }

 private:
  struct Stream;
  void ReadLoop();
  void TerminalLoop();
  void Consume(Stream& s, int which, const char* data, size_t n);
  void WriteDisk(Stream& s, const char* data, size_t n);
  // Marks `s` started and writes the output held before (mu_ held).
  void FlushEarly(Stream& s);
  static constexpr size_t kEarlyBytes = 1 << 20;

  const RankLogOptions options_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;       // eventfd: stop
  mutable std::mutex mu_;  // streams_, stats_
  std::condition_variable drained_;
  std::vector<std::unique_ptr<Stream>> streams_;
  Stats stats_;
  std::atomic<bool> stop_{false};
  std::thread reader_;
  // Terminal output: (fd, bytes) chunks, bounded.
  std::mutex term_mu_;
  std::condition_variable term_cv_;
  std::deque<std::pair<int, std::string>> term_queue_;
  size_t term_queued_ = 0;
  bool term_stop_ = false;
  std::thread terminal_;
};

}  // namespace titan::supervisor
