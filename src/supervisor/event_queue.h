// EventQueue: step events from titan run's receiver thread to its loop. A bounded queue plus an
// eventfd that wakes the loop's poll(); events past the bound are dropped and counted.
//
// Thread safety: Push() from any thread (the receiver's); Drain(), fd() and dropped() from any
// thread too, but only the loop drains.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "src/client/wire_parse.h"

namespace titan::supervisor {

class EventQueue {
 public:
  static constexpr size_t kMaxQueuedEvents = 65536;

  EventQueue() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~EventQueue() {
    if (fd_ >= 0) ::close(fd_);
  }
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // Readable (POLLIN) while events wait.
  int fd() const { return fd_; }
  void Push(const wire::ParsedEvent& e) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (events_.size() >= kMaxQueuedEvents) {
        ++dropped_;
        return;
      }
      events_.push_back(e);
    }
    uint64_t one = 1;
    ssize_t n = ::write(fd_, &one, sizeof(one));
    (void)n;
  }
  // Every queued event, oldest first; the queue is empty after.
  std::vector<wire::ParsedEvent> Drain() {
    uint64_t v;
    ssize_t n = ::read(fd_, &v, sizeof(v));
    (void)n;
    std::vector<wire::ParsedEvent> out;
    std::lock_guard<std::mutex> l(mu_);
    out.swap(events_);
    return out;
  }
  // Events dropped because the queue was full, since the start.
  uint64_t dropped() {
    std::lock_guard<std::mutex> l(mu_);
    return dropped_;
  }

 private:
  int fd_;
  std::mutex mu_;
  std::vector<wire::ParsedEvent> events_;
  uint64_t dropped_ = 0;
};

}  // namespace titan::supervisor
