#include "src/http/work_pool.h"

#include <algorithm>

namespace titan::http {

WorkPool::WorkPool(int threads) : pool_(static_cast<size_t>(std::max(1, threads))) {}

WorkPool::~WorkPool() { Close(); }

void WorkPool::Close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  // Without stop(), join() waits until the jobs already queued have run.
  pool_.join();
}

}  // namespace titan::http
