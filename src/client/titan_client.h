// titan::Client: the header-only C++ client that training processes use to tell the node's
// `titan agent` (and `titan run`) about steps, checkpoints and named marks.
//
//   #include "src/client/titan_client.h"
//   titan::Client& c = titan::Client::Default();   // process-wide, configured from the env
//   c.Hello("llama-70b");
//   c.StepBegin(step); ... c.StepEnd(step);
//
// Contract
// - Every call costs one clock read and one non-blocking sendto() per socket (about 1 us): it
//   never blocks, never throws, never raises a signal (MSG_NOSIGNAL) and never allocates.
// - When the agent is down (ENOENT, ECONNREFUSED) the event is dropped and counted: dropped()
//   is the number of datagrams (one per event and socket) that were lost.
// - When the agent's queue is full (EAGAIN; the kernel queues only net.unix.max_dgram_qlen
//   datagrams per socket, 10 in a fresh network namespace) the event is deferred: kept in a
//   small per-socket queue (kDeferCapacity) and sent, in order, before the next event by any
//   later call. A full deferral queue drops the new event (counted). Goodbye() waits up to
//   kGoodbyeFlushNs for deferred events to go out: the only call that may wait at all.
// - Calls return true iff every configured socket accepted the event immediately.
// - Configuration is read on first use, not at construction: TITAN_AGENT_SOCKET (':'-separated
//   paths, at most wire::kMaxSockets; unset -> wire::kDefaultSocketPath; set but empty ->
//   events disabled, nothing counted), and the rank from TITAN_RANK, else RANK, else -1.
//   SetRank() overrides the rank at any time.
// - Thread safety: all methods may be called from any thread concurrently (one socket shared
//   by all threads; sendto on a datagram socket is atomic per datagram).
// - fork(): the child keeps working; the sender pid in each event is refreshed by a
//   pthread_atfork handler, so events from the child carry the child's pid.
// - Names (Hello's job, Mark's name, checkpoint tags) are truncated to wire::kNameBytes - 1
//   bytes at a UTF-8 character boundary.
#pragma once

#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

#include "src/client/wire.h"

namespace titan {

namespace client_internal {

// The pid events carry; refreshed in the child after fork() (getpid() is a real syscall in
// glibc >= 2.25, too slow to call per event).
inline std::atomic<int32_t>& CachedPid() {
  static std::atomic<int32_t> pid{0};
  return pid;
}
inline void RefreshPidAfterFork() {
  CachedPid().store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
}
inline void InitPidOnce() {
  static const bool registered = [] {
    RefreshPidAfterFork();
    pthread_atfork(nullptr, nullptr, &RefreshPidAfterFork);
    return true;
  }();
  (void)registered;
}

// Length of the longest prefix of `name` that fits in `max_bytes` without cutting a UTF-8
// character in half.
inline size_t Utf8PrefixBytes(std::string_view name, size_t max_bytes) {
  if (name.size() <= max_bytes) return name.size();
  size_t n = max_bytes;
  // Back up over continuation bytes (10xxxxxx) so the cut falls before a lead byte.
  while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
  return n;
}

// Parses a rank from an environment value; -1 when absent or not a whole non-negative int32.
inline int32_t ParseRankEnv(const char* text) {
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 0 || value > INT32_MAX) return -1;
  return static_cast<int32_t>(value);
}

}  // namespace client_internal

class Client {
 public:
  // Configuration comes from the environment on first use.
  Client() = default;
  // Explicit configuration (tests, embedding): `socket_paths` as in TITAN_AGENT_SOCKET
  // (':'-separated; empty disables), `rank` as the rank to send (-1 unknown).
  Client(std::string socket_paths, int32_t rank)
      : explicit_paths_(std::move(socket_paths)), has_explicit_config_(true), rank_(rank) {}
  ~Client() {
    if (fd_ >= 0) close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The process-wide client (never destroyed, so it is safe to use from atexit handlers and
  // other static destructors).
  static Client& Default() {
    static Client* client = new Client();
    return *client;
  }

  bool Hello(std::string_view job) { return Send(wire::EventKind::kHello, -1, 0, job); }
  bool StepBegin(int64_t step) { return Send(wire::EventKind::kStepBegin, step, 0, {}); }
  bool StepEnd(int64_t step) { return Send(wire::EventKind::kStepEnd, step, 0, {}); }
  bool CheckpointBegin(int64_t step, std::string_view tag = {}) {
    return Send(wire::EventKind::kCheckpointBegin, step, 0, tag);
  }
  bool CheckpointEnd(int64_t step, int64_t bytes, std::string_view tag = {}) {
    return Send(wire::EventKind::kCheckpointEnd, step, bytes, tag);
  }
  bool CheckpointCommitted(int64_t step, int64_t bytes) {
    return Send(wire::EventKind::kCheckpointCommitted, step, bytes, {});
  }
  bool CheckpointDurable(int64_t step, int64_t bytes) {
    return Send(wire::EventKind::kCheckpointDurable, step, bytes, {});
  }
  bool Mark(std::string_view name) { return Send(wire::EventKind::kMark, -1, 0, name); }
  bool Heartbeat() { return Send(wire::EventKind::kHeartbeat, -1, 0, {}); }
  // Also waits (at most kGoodbyeFlushNs) for deferred events to be sent: call it last.
  bool Goodbye() {
    // The goodbye carries the events this process lost (value), so that the receiver can say.
    const bool sent_now = Send(wire::EventKind::kGoodbye, -1, static_cast<int64_t>(dropped()), {});
    timespec start, now, pause = {0, 200'000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (Flush() > 0) {
      clock_gettime(CLOCK_MONOTONIC, &now);
      if ((now.tv_sec - start.tv_sec) * 1'000'000'000 + (now.tv_nsec - start.tv_nsec) >
          kGoodbyeFlushNs) {
        break;
      }
      nanosleep(&pause, nullptr);
    }
    return sent_now;
  }

  // Sends one event of any kind (the methods above are shorthands).
  bool Send(wire::EventKind kind, int64_t step, int64_t value, std::string_view name) {
    EnsureInit();
    if (num_sockets_ == 0) return false;  // disabled by an empty TITAN_AGENT_SOCKET
    wire::Event event = wire::MakeEvent(
        kind, rank_.load(std::memory_order_relaxed),
        client_internal::CachedPid().load(std::memory_order_relaxed), step, value, nullptr);
    if (!name.empty()) {
      std::memcpy(event.name, name.data(),
                  client_internal::Utf8PrefixBytes(name, wire::kNameBytes - 1));
    }
    timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    event.time_ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
    bool all_sent = true;
    for (int i = 0; i < num_sockets_; ++i) {
      // Fast path: nothing deferred, so this event may go straight out.
      if (deferred_total_.load(std::memory_order_acquire) == 0) {
        const int error = SendOne(i, event);
        if (error == 0) continue;
        if (error != EAGAIN) {
          Drop(error, 1);
          all_sent = false;
          continue;
        }
      }
      all_sent = false;
      SendOrDefer(i, event);
    }
    return all_sent;
  }

  // Tries once to send deferred events (never waits); returns how many are still deferred.
  int Flush() {
    EnsureInit();
    DeferLock lock(this);
    if (!lock.held()) return deferred_total_.load(std::memory_order_relaxed);
    for (int i = 0; i < num_sockets_; ++i) FlushLocked(i);
    return deferred_total_.load(std::memory_order_relaxed);
  }

  static constexpr int kDeferCapacity = 64;  // events per socket
  static constexpr int64_t kGoodbyeFlushNs = 20'000'000;

  void SetRank(int32_t rank) {
    EnsureInit();  // so that a later first use does not overwrite it from the environment
    rank_.store(rank, std::memory_order_relaxed);
  }
  int32_t rank() {
    EnsureInit();
    return rank_.load(std::memory_order_relaxed);
  }
  // Datagrams lost, one per event and socket: the agent was down, or both its kernel queue and
  // this client's deferral queue were full.
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Datagrams the kernel accepted (immediately or after a deferral).
  uint64_t sent() const { return sent_.load(std::memory_order_relaxed); }
  // Events waiting in the deferral queues for the agent's queue to have room.
  int deferred() const { return deferred_total_.load(std::memory_order_relaxed); }
  // errno of the most recent refused datagram (0 if none): ENOENT/ECONNREFUSED agent down,
  // EAGAIN queue full.
  int last_errno() const { return last_errno_.load(std::memory_order_relaxed); }
  // The socket paths in use (after first use), e.g. for a diagnostic line.
  std::string socket_paths() {
    EnsureInit();
    std::string out;
    for (int i = 0; i < num_sockets_; ++i) {
      if (i > 0) out += ':';
      out += addresses_[i].sun_path;
    }
    return out;
  }

 private:
  // A try-only lock around the deferral queues: a caller that cannot take it at once drops its
  // event instead of waiting. The word holds the owner's pid, so a child forked while another
  // thread held it can take it over (the parent's deferred events are the parent's to send).
  class DeferLock {
   public:
    explicit DeferLock(Client* c) : c_(c) {
      const int32_t me = client_internal::CachedPid().load(std::memory_order_relaxed);
      int32_t owner = 0;
      if (c_->defer_owner_pid_.compare_exchange_strong(owner, me, std::memory_order_acquire)) {
        held_ = true;
      } else if (owner != me && c_->defer_owner_pid_.compare_exchange_strong(
                                    owner, me, std::memory_order_acquire)) {
        held_ = true;  // inherited across fork() from a thread that does not exist here
        for (DeferQueue& q : c_->deferred_) q = DeferQueue{};
        c_->deferred_total_.store(0, std::memory_order_relaxed);
      }
    }
    ~DeferLock() {
      if (held_) c_->defer_owner_pid_.store(0, std::memory_order_release);
    }
    bool held() const { return held_; }

   private:
    Client* c_;
    bool held_ = false;
  };

  struct DeferQueue {
    wire::Event events[kDeferCapacity];
    int head = 0;
    int count = 0;
  };

  // 0 if socket i accepted the event, else the errno.
  int SendOne(int i, const wire::Event& event) {
    if (fd_ < 0) return EBADF;
    const ssize_t n = sendto(fd_, &event, sizeof(event), MSG_DONTWAIT | MSG_NOSIGNAL,
                             reinterpret_cast<const sockaddr*>(&addresses_[i]), address_sizes_[i]);
    if (n == static_cast<ssize_t>(sizeof(event))) {
      sent_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    return n < 0 ? errno : EMSGSIZE;
  }

  void Drop(int error, uint64_t count) {
    last_errno_.store(error, std::memory_order_relaxed);
    dropped_.fetch_add(count, std::memory_order_relaxed);
  }

  // Sends socket i's deferred events in order until the kernel refuses one (at most
  // kDeferCapacity sendto calls). Requires the DeferLock.
  void FlushLocked(int i) {
    DeferQueue& q = deferred_[i];
    while (q.count > 0) {
      const int error = SendOne(i, q.events[q.head]);
      if (error == EAGAIN) return;
      if (error != 0) {  // the agent went away: what waited for it is lost
        Drop(error, static_cast<uint64_t>(q.count));
        deferred_total_.fetch_sub(q.count, std::memory_order_release);
        q.count = 0;
        return;
      }
      q.head = (q.head + 1) % kDeferCapacity;
      --q.count;
      deferred_total_.fetch_sub(1, std::memory_order_release);
    }
  }

  // The slow path: flush what socket i has deferred, then send `event` or defer it.
  void SendOrDefer(int i, const wire::Event& event) {
    DeferLock lock(this);
    if (!lock.held()) {
      Drop(EAGAIN, 1);  // another thread is flushing: never wait for it
      return;
    }
    FlushLocked(i);
    DeferQueue& q = deferred_[i];
    if (q.count == 0) {
      const int error = SendOne(i, event);
      if (error == 0) return;
      if (error != EAGAIN) {
        Drop(error, 1);
        return;
      }
    }
    if (q.count == kDeferCapacity) {
      Drop(EAGAIN, 1);
      return;
    }
    q.events[(q.head + q.count) % kDeferCapacity] = event;
    ++q.count;
    deferred_total_.fetch_add(1, std::memory_order_release);
    last_errno_.store(EAGAIN, std::memory_order_relaxed);
  }

  void EnsureInit() {
    std::call_once(init_once_, [this] { Init(); });
  }

  void Init() {
    client_internal::InitPidOnce();
    std::string paths;
    if (has_explicit_config_) {
      paths = explicit_paths_;
    } else {
      const char* env_paths = std::getenv(wire::kSocketEnv);
      paths = env_paths != nullptr ? env_paths : wire::kDefaultSocketPath;
      const char* titan_rank = std::getenv("TITAN_RANK");
      rank_.store(
          client_internal::ParseRankEnv(titan_rank != nullptr ? titan_rank : std::getenv("RANK")),
          std::memory_order_relaxed);
    }
    std::string_view rest = paths;
    while (!rest.empty() && num_sockets_ < wire::kMaxSockets) {
      const size_t colon = rest.find(':');
      const std::string_view path = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) continue;
      sockaddr_un& address = addresses_[num_sockets_];
      std::memset(&address, 0, sizeof(address));
      address.sun_family = AF_UNIX;
      std::memcpy(address.sun_path, path.data(), path.size());
      address_sizes_[num_sockets_] =
          static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
      ++num_sockets_;
    }
    if (num_sockets_ > 0) {
      // On failure (EMFILE) fd_ stays -1 and every event is counted as dropped.
      fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd_ < 0) last_errno_.store(errno, std::memory_order_relaxed);
    }
  }

  std::once_flag init_once_;
  const std::string explicit_paths_;
  const bool has_explicit_config_ = false;
  int fd_ = -1;
  int num_sockets_ = 0;
  sockaddr_un addresses_[wire::kMaxSockets];
  socklen_t address_sizes_[wire::kMaxSockets] = {};
  std::atomic<int32_t> rank_{-1};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> sent_{0};
  std::atomic<int> last_errno_{0};
  std::atomic<int32_t> defer_owner_pid_{0};  // DeferLock
  std::atomic<int> deferred_total_{0};
  DeferQueue deferred_[wire::kMaxSockets];
};

}  // namespace titan
