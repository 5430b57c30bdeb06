#include "src/checkpoint/prefetch.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/checkpoint/catalog.h"
#include "src/checkpoint/layout.h"
#include "src/checkpoint/mirror.h"

namespace titan::checkpoint {

Result<std::unique_ptr<CheckpointPrefetch>> CheckpointPrefetch::Start(
    const std::string& local_dir, const std::string& durable, std::optional<NodeRanks> node) {
  TITAN_ASSIGN_OR_RETURN(std::shared_ptr<Storage> local, OpenPosixStorage(local_dir));
  std::string lock_path = fmt::format("{}/{}", local_dir, kPrefetchLockName);
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, "creating the prefetch lock " + lock_path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    char holder[256] = {};
    ssize_t n = ::pread(fd, holder, sizeof(holder) - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) return ErrnoError(err, "locking " + lock_path);
    return FailedPreconditionError(fmt::format(
        "{} is locked by another prefetch ({}); one titan run per checkpoint directory", lock_path,
        n > 0 ? std::string(holder, static_cast<size_t>(n)) : "holder unknown"));
  }
  std::string line = fmt::format("titan run (pid {}) is prefetching the newest checkpoint of {}\n",
                                 ::getpid(), durable);
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) < 0) {
    Log(LogLevel::kDebug, "checkpoint", "{}: could not describe the holder: errno {}", lock_path,
        errno);
  }
  return std::unique_ptr<CheckpointPrefetch>(
      new CheckpointPrefetch(std::move(local), durable, node, fd));
}

CheckpointPrefetch::CheckpointPrefetch(std::shared_ptr<Storage> local, std::string durable,
                                       std::optional<NodeRanks> node, int lock_fd)
    : local_(std::move(local)),
      durable_(std::move(durable)),
      node_(node),
      lock_fd_(lock_fd),
      start_ns_(MonoNowNs()) {
  thread_ = std::thread([this] {
    outcome_ = Run();
    ::close(lock_fd_);  // readers waiting on LOCK_SH go on
    done_.store(true, std::memory_order_release);
  });
}

CheckpointPrefetch::~CheckpointPrefetch() {
  cancel_.store(true);
  thread_.join();
}

const Result<PrefetchOutcome>& CheckpointPrefetch::outcome() const {
  TITAN_CHECK(done()) << "CheckpointPrefetch::outcome() before done()";
  return outcome_;
}

Result<PrefetchOutcome> CheckpointPrefetch::Run() {
  PrefetchOutcome out;
  Storage& local = *local_;
  TITAN_ASSIGN_OR_RETURN(std::shared_ptr<Storage> store, OpenStorage(durable_, false));
  TITAN_ASSIGN_OR_RETURN(out.local_step, LatestStep(local));
  TITAN_ASSIGN_OR_RETURN(out.durable_step, LatestStep(*store));
  if (out.durable_step && (!out.local_step || *out.local_step < *out.durable_step)) {
    int64_t step = *out.durable_step;
    CopyOptions options;
    options.cancelled = [this] { return cancel_.load(std::memory_order_relaxed); };
    options.cache_destination = true;  // the workers read it next
    Result<CopyReport> copy = node_ ? FetchNodeFiles(*store, step, options)
                                    : CopyCheckpoint(*store, step, local, options);
    if (!copy.ok()) {
      return copy.status().WithContext(
          fmt::format("prefetching step {} from {}", step, store->Describe("")));
    }
    out.copy = *copy;
    out.copied = true;
    if (!node_) {
      TITAN_RETURN_IF_ERROR(
          WriteDurableMarker(local, step, *store, copy->copied_bytes, MonoNowNs() - start_ns_));
    }
  }
  out.elapsed_ns = MonoNowNs() - start_ns_;
  return out;
}

Result<CopyReport> CheckpointPrefetch::FetchNodeFiles(Storage& store, int64_t step,
                                                      const CopyOptions& options) {
  TITAN_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(store, step));
  NodeRanks node = *node_;
  return CopyDataFiles(store, manifest, *local_, options, [node](const std::string& file) {
    std::optional<int> rank = DataFileRank(file);
    return rank && *rank >= node.first_rank && *rank - node.first_rank < node.ranks;
  });
}

}  // namespace titan::checkpoint
