#include "src/client/event_receiver.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/env.h"
#include "src/base/text.h"

namespace titan {
namespace {

constexpr int kBatchSize = 64;
constexpr int64_t kRejectLogIntervalNs = 10 * kNsPerSecond;
constexpr std::string_view kComponent = "events";
// Below this kernel queue length the receiver sleeps on the socket (see drain_interval_ns).
constexpr int kMinQueueForTimedDrain = 256;

// A Unix socket address for `path`, or INVALID_ARGUMENT if it does not fit.
Result<sockaddr_un> SocketAddress(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return InvalidArgumentError(fmt::format(
        "event socket path '{}' is {} bytes; it must be 1 to {} bytes: choose a shorter path", path,
        path.size(), sizeof(address.sun_path) - 1));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

// True if some process receives on the datagram socket at `address` (connect() succeeds).
bool SomeoneListens(const sockaddr_un& address) {
  const int probe = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  const bool live =
      connect(probe, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  close(probe);
  return live;
}

constexpr const char* kMaxDgramQlenPath = "/proc/sys/net/unix/max_dgram_qlen";

int ReadMaxDgramQlen() {
  auto text = Env::ReadFile(kMaxDgramQlenPath);
  int64_t value = -1;
  if (!text.ok() || !ParseInt64(Trim(*text), &value)) return -1;
  return static_cast<int>(value);
}

}  // namespace

struct EventReceiver::Batch {
  static constexpr size_t kControlBytes = CMSG_SPACE(sizeof(ucred));
  alignas(8) std::byte data[kBatchSize][sizeof(wire::Event)];
  alignas(cmsghdr) char control[kBatchSize][kControlBytes];
  iovec iov[kBatchSize];
  mmsghdr messages[kBatchSize];
};

uint64_t EventReceiverStats::rejected_total() const {
  uint64_t total = 0;
  for (uint64_t n : rejected) total += n;
  return total;
}

EventReceiver::EventReceiver(EventReceiverOptions options)
    : options_(std::move(options)), reject_log_(kRejectLogIntervalNs) {}

Result<std::unique_ptr<EventReceiver>> EventReceiver::Start(EventReceiverOptions options) {
  if (!options.on_event) {
    return InvalidArgumentError("EventReceiver needs an on_event callback");
  }
  std::unique_ptr<EventReceiver> receiver(new EventReceiver(std::move(options)));
  TITAN_RETURN_IF_ERROR(receiver->Bind());
  receiver->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (receiver->wake_fd_ < 0) return ErrnoError(errno, "event receiver: eventfd()");
  receiver->thread_ = std::thread([r = receiver.get()] { r->Run(); });
  return receiver;
}

Status EventReceiver::Bind() {
  const std::string& path = options_.socket_path;
  TITAN_ASSIGN_OR_RETURN(const sockaddr_un address, SocketAddress(path));
  // The kernel copies max_dgram_qlen into each socket when it is made: raise it first.
  const int wanted_qlen = options_.raise_max_dgram_qlen_to;
  const int current_qlen = ReadMaxDgramQlen();
  if (wanted_qlen > 0 && current_qlen >= 0 && current_qlen < wanted_qlen) {
    const std::string value = std::to_string(wanted_qlen) + "\n";
    const int fd = open(kMaxDgramQlenPath, O_WRONLY | O_CLOEXEC);
    const bool ok =
        fd >= 0 && write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
    const int error = errno;
    if (fd >= 0) close(fd);
    if (ok) {
      Log(LogLevel::kInfo, kComponent, "raised net.unix.max_dgram_qlen from {} to {}", current_qlen,
          wanted_qlen);
    } else {
      Log(LogLevel::kWarning, kComponent, "could not raise net.unix.max_dgram_qlen to {}: {}",
          wanted_qlen, std::strerror(error));
    }
  }
  socket_fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (socket_fd_ < 0) return ErrnoError(errno, "event socket: socket(AF_UNIX, SOCK_DGRAM)");
  max_dgram_qlen_ = ReadMaxDgramQlen();

  const auto* raw = reinterpret_cast<const sockaddr*>(&address);
  if (bind(socket_fd_, raw, sizeof(address)) != 0) {
    if (errno != EADDRINUSE) {
      return ErrnoError(errno, fmt::format("binding event socket {} (does its directory exist "
                                           "and is it writable?)",
                                           path));
    }
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
      return FailedPreconditionError(fmt::format(
          "event socket path {} exists and is not a socket; remove it or choose another path",
          path));
    }
    if (SomeoneListens(address)) {
      return AlreadyExistsError(fmt::format(
          "another process (a running titan agent or titan run?) already receives events at "
          "{}; stop it, or give this one a different socket path (clients follow {})",
          path, wire::kSocketEnv));
    }
    // A stale socket file left by a receiver that died: replace it.
    Log(LogLevel::kInfo, kComponent, "replacing stale event socket {}", path);
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError(errno, fmt::format("removing stale event socket {}", path));
    }
    if (bind(socket_fd_, raw, sizeof(address)) != 0) {
      return ErrnoError(errno, fmt::format("binding event socket {}", path));
    }
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0) socket_inode_ = st.st_ino;
  if (chmod(path.c_str(), options_.socket_mode) != 0) {
    Log(LogLevel::kWarning, kComponent,
        "chmod {:o} {}: {}; processes of other users may not "
        "be able to send events",
        options_.socket_mode, path, std::strerror(errno));
  }

  const int rcvbuf = options_.receive_buffer_bytes;
  if (setsockopt(socket_fd_, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) != 0) {
    setsockopt(socket_fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));  // capped by rmem_max
  }
  socklen_t size = sizeof(granted_rcvbuf_bytes_);
  getsockopt(socket_fd_, SOL_SOCKET, SO_RCVBUF, &granted_rcvbuf_bytes_, &size);
  if (options_.pass_credentials) {
    const int on = 1;
    if (setsockopt(socket_fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0) {
      Log(LogLevel::kWarning, kComponent, "SO_PASSCRED on {}: {}; sender pids are unverified", path,
          std::strerror(errno));
    }
  }
  if (options_.drain_interval_ns == EventReceiverOptions::kAutoDrainInterval) {
    options_.drain_interval_ns = max_dgram_qlen_ >= kMinQueueForTimedDrain ? kNsPerMs : 0;
  }
  if (max_dgram_qlen_ >= 0 && max_dgram_qlen_ < kMinQueueForTimedDrain) {
    // Said at start-up only in the debug log: the first sender that reports drops (in its
    // goodbye) gets the one warning, with this advice.
    Log(LogLevel::kDebug, kComponent,
        "net.unix.max_dgram_qlen is {}: a burst of more than {} events (e.g. all ranks of a "
        "node ending a step together) can be dropped while the agent is not scheduled; raise it "
        "with `sysctl -w net.unix.max_dgram_qlen=512` before starting the agent, or start it as "
        "root with --raise-event-queue 512 (which also lets the receiver drain every 1 ms "
        "instead of being woken by each event's sender)",
        max_dgram_qlen_, max_dgram_qlen_);
  }
  return OkStatus();
}

EventReceiver::~EventReceiver() {
  Stop();
  if (socket_fd_ >= 0) {
    struct stat st;
    if (socket_inode_ != 0 && stat(options_.socket_path.c_str(), &st) == 0 &&
        st.st_ino == socket_inode_) {
      unlink(options_.socket_path.c_str());
    }
    close(socket_fd_);
  }
  if (wake_fd_ >= 0) close(wake_fd_);
}

void EventReceiver::Stop() {
  if (stopped_.exchange(true)) return;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    ssize_t n = write(wake_fd_, &one, sizeof(one));
    (void)n;  // an eventfd write of 1 cannot fail short of overflow
  }
  if (thread_.joinable()) thread_.join();
}

void EventReceiver::Run() {
  auto batch = std::make_unique<Batch>();
  // With a drain interval, only the wake-up eventfd is polled (with a timeout): senders then
  // find no sleeper on the socket and skip the wake-up.
  const bool timed = options_.drain_interval_ns > 0;
  pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {socket_fd_, POLLIN, 0}};
  const timespec interval = {static_cast<time_t>(options_.drain_interval_ns / kNsPerSecond),
                             static_cast<long>(options_.drain_interval_ns % kNsPerSecond)};
  while (true) {
    Drain(batch.get());
    if (ppoll(fds, timed ? 1 : 2, timed ? &interval : nullptr, nullptr) < 0 && errno != EINTR) {
      receive_errors_.fetch_add(1, std::memory_order_relaxed);
      Log(LogLevel::kError, kComponent, "poll on event socket {}: {}", options_.socket_path,
          std::strerror(errno));
      return;
    }
    if (fds[0].revents & POLLIN) {
      Drain(batch.get());  // deliver what was queued before Stop()
      return;
    }
  }
}

void EventReceiver::Drain(Batch* b) {
  while (true) {
    for (int i = 0; i < kBatchSize; ++i) {
      b->iov[i] = {b->data[i], sizeof(wire::Event)};
      msghdr& h = b->messages[i].msg_hdr;
      h = {};
      h.msg_iov = &b->iov[i];
      h.msg_iovlen = 1;
      if (options_.pass_credentials) {
        h.msg_control = b->control[i];
        h.msg_controllen = Batch::kControlBytes;
      }
    }
    // MSG_TRUNC: msg_len is the datagram's real length, so oversized ones are seen as such.
    const int n = recvmmsg(socket_fd_, b->messages, kBatchSize, MSG_DONTWAIT | MSG_TRUNC, nullptr);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR) continue;
      receive_errors_.fetch_add(1, std::memory_order_relaxed);
      reject_log_.Log(LogLevel::kError, kComponent, "recvmmsg on event socket {}: {}",
                      options_.socket_path, std::strerror(errno));
      return;
    }
    const int64_t now_ns = WallNowNs();
    for (int i = 0; i < n; ++i) {
      msghdr& h = b->messages[i].msg_hdr;
      int32_t sender_pid = 0;
      uint32_t sender_uid = 0;
      for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
            c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
          ucred cred;
          std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
          sender_pid = cred.pid;
          sender_uid = cred.uid;
        }
      }
      // With MSG_TRUNC, msg_len is the real length, which may exceed the buffer.
      const size_t size = b->messages[i].msg_len;
      wire::ParsedEvent event;
      const std::optional<wire::RejectReason> reason =
          size > sizeof(wire::Event)
              ? wire::RejectReason::kTooLong
              : wire::ParseEventInto(std::span<const std::byte>(b->data[i], size), now_ns, &event);
      if (reason) {
        Reject(*reason, sender_pid, b->data[i], std::min(size, sizeof(wire::Event)));
        CountHandled();
        continue;
      }
      event.sender_pid = sender_pid;
      event.sender_uid = sender_uid;
      event.received_ns = now_ns;
      if (event.name_repaired) names_repaired_.fetch_add(1, std::memory_order_relaxed);
      accepted_.fetch_add(1, std::memory_order_relaxed);
      CountHandled();  // before the callback: whoever saw the event sees it counted
      if (event.kind == wire::EventKind::kGoodbye && event.value > 0) WarnSenderDrops(event);
      options_.on_event(event);
    }
    if (n < kBatchSize) return;  // the queue is (very likely) empty; poll() will tell
  }
}

void EventReceiver::WarnSenderDrops(const wire::ParsedEvent& goodbye) {
  if (warned_sender_drops_.exchange(true)) return;  // once per receiver
  std::string advice =
      max_dgram_qlen_ >= 0 && max_dgram_qlen_ < kMinQueueForTimedDrain
          ? fmt::format(" (net.unix.max_dgram_qlen is {}: `sysctl -w net.unix.max_dgram_qlen=512`)",
                        max_dgram_qlen_)
          : "";
  Log(LogLevel::kWarning, kComponent,
      "rank {} (pid {}) dropped {} event(s) its queue could not hold{}", goodbye.rank,
      goodbye.pid(), goodbye.value, advice);
}

void EventReceiver::Reject(wire::RejectReason reason, int32_t sender_pid, const std::byte* data,
                           size_t size) {
  rejected_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  // The detailed message costs an allocation: build it only when a line can be written (a flood
  // of bad datagrams then costs one clock read each; reject_log_ counts the suppressed ones).
  std::string detail;
  const int64_t now_ns = MonoNowNs();
  if (now_ns >= next_reject_detail_ns_) {
    next_reject_detail_ns_ = now_ns + kRejectLogIntervalNs;
    detail = reason == wire::RejectReason::kTooLong
                 ? std::string("event datagram rejected (too_long): more than 64 bytes")
                 : std::string(wire::ParseEventDatagram({data, size}).status().message());
  }
  reject_log_.Log(LogLevel::kWarning, kComponent, "event socket {}: datagram from pid {}: {}",
                  options_.socket_path, sender_pid, detail);
}

void EventReceiver::CountHandled() {
  // Release, after the datagram's own counters: a reader that loads datagrams_ first (acquire)
  // sees every counter of the datagrams it counts. Counted for the whole batch before the
  // datagrams were classified, a reader that waited for N datagrams could see fewer verdicts
  // (a TSan run of MalformedDatagramsAreCountedPerReason saw 1 of 11).
  datagrams_.fetch_add(1, std::memory_order_release);
}

EventReceiverStats EventReceiver::Stats() const {
  EventReceiverStats s;
  s.datagrams = datagrams_.load(std::memory_order_acquire);  // first: see CountHandled
  s.accepted = accepted_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < wire::kRejectReasonCount; ++i) {
    s.rejected[i] = rejected_[i].load(std::memory_order_relaxed);
  }
  s.oversized = s.rejected_for(wire::RejectReason::kTooLong);
  s.names_repaired = names_repaired_.load(std::memory_order_relaxed);
  s.receive_errors = receive_errors_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace titan
