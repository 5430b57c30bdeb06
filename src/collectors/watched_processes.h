// WatchedProcesses: the set of training processes (rank, pid) the agent has heard from, which
// the process collector samples. Bounded (kMaxProcesses); the oldest entry is evicted when full.
// Thread safety: all methods are thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace titan {

struct WatchedProcess {
  pid_t pid;
  int32_t rank;  // -1 if unknown
};

class WatchedProcesses {
 public:
  static constexpr size_t kMaxProcesses = 1024;

  // Adds or refreshes (pid, rank). Returns true when the pid was new.
  bool Watch(pid_t pid, int32_t rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& p : processes_) {
      if (p.pid == pid) {
        p.rank = rank;
        return false;
      }
    }
    if (processes_.size() >= kMaxProcesses) processes_.erase(processes_.begin());
    processes_.push_back({pid, rank});
    return true;
  }
  void Forget(pid_t pid) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(processes_, [pid](const WatchedProcess& p) { return p.pid == pid; });
  }
  std::vector<WatchedProcess> Snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return processes_;
  }
  // Like Snapshot(), into *out, reusing its capacity (no allocation once it is large enough).
  void SnapshotInto(std::vector<WatchedProcess>* out) const {
    std::lock_guard<std::mutex> lock(mutex_);
    out->assign(processes_.begin(), processes_.end());
  }

 private:
  mutable std::mutex mutex_;
  std::vector<WatchedProcess> processes_;
};

}  // namespace titan
