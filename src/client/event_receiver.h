// EventReceiver: the agent's end of the event socket. Binds a Unix datagram socket at a path,
// reads datagrams on its own thread with recvmmsg() in batches of 64, validates each
// (wire_parse.h) and hands every valid event to a callback. Bad datagrams are counted per
// reason and logged at most once per 10 s; they never stop the receiver.
//
// Binding: if the path exists and is a socket that nobody listens on (a crashed agent left it),
// it is replaced. If a live process receives there, Start() fails with ALREADY_EXISTS; if the
// path is some other kind of file, FAILED_PRECONDITION. The socket file is made writable by
// every user (mode 0666 by default) so that training processes of any user can report; the
// kernel-verified sender pid and uid (SCM_CREDENTIALS) come with each event.
//
// Capacity: the kernel queues at most net.unix.max_dgram_qlen datagrams per receiving socket
// (10 on a kernel without systemd's 512 default); beyond that senders get EAGAIN and count a
// drop. The receiver drains the queue as fast as it can; see max_datagram_queue().
//
// Thread safety: Stats() and socket_path() may be called from any thread. Stop() and the
// destructor must not be called from the callback.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "src/base/log.h"
#include "src/base/status.h"
#include "src/client/wire_parse.h"

namespace titan {

struct EventReceiverOptions {
  std::string socket_path;
  // Called on the receiver thread for every valid event, in arrival order. Must not throw, and
  // must not block for long: while it runs, datagrams queue in the kernel and then in the
  // senders' deferral queues, and are dropped once both are full.
  std::function<void(const wire::ParsedEvent&)> on_event;
  // SO_RCVBUF(FORCE) request; the kernel may grant less (see receive_buffer_bytes()).
  int receive_buffer_bytes = 8 << 20;
  // Ask the kernel for the sender's pid and uid with each datagram (SO_PASSCRED).
  bool pass_credentials = true;
  unsigned socket_mode = 0666;
  // If > 0 and net.unix.max_dgram_qlen is lower, raise it to this before creating the socket
  // (needs root in the receiver's network namespace). The sysctl is per network namespace:
  // in a container's own namespace this touches nothing else; in the host's, it applies to
  // every Unix datagram socket created afterwards. A failure is logged, not an error.
  int raise_max_dgram_qlen_to = 0;
  // How the thread waits for datagrams:
  //  0: it sleeps on the socket; each event that finds it asleep also pays, inside the sender's
  //     sendto(), for waking it (a cross-CPU wake-up, and possibly preemption of the sender).
  //  > 0: it never sleeps on the socket but drains it every drain_interval_ns, so senders never
  //     wake it: cheaper calls, at most this much delivery delay, and a burst of more than
  //     net.unix.max_dgram_qlen events within one interval is dropped.
  //  kAutoDrainInterval: 1 ms when max_dgram_qlen >= 256 (a systemd host: 512), else 0.
  static constexpr int64_t kAutoDrainInterval = -1;
  int64_t drain_interval_ns = kAutoDrainInterval;
};

// A snapshot of the counters (monotonic since Start()).
struct EventReceiverStats {
  uint64_t datagrams = 0;  // every datagram handled, valid or not
  uint64_t accepted = 0;   // handed to the callback
  std::array<uint64_t, wire::kRejectReasonCount> rejected{};  // indexed by RejectReason
  uint64_t oversized = 0;       // datagrams longer than 64 bytes (== rejected[kTooLong])
  uint64_t names_repaired = 0;  // accepted events whose name had bytes replaced by '?'
  uint64_t receive_errors = 0;  // recvmmsg() failures other than EAGAIN/EINTR

  uint64_t rejected_total() const;
  uint64_t rejected_for(wire::RejectReason reason) const {
    return rejected[static_cast<size_t>(reason)];
  }
};

class EventReceiver {
 public:
  // Binds the socket and starts the receiver thread. Errors: INVALID_ARGUMENT (path empty or
  // longer than 107 bytes, no callback), ALREADY_EXISTS (another receiver is live there),
  // FAILED_PRECONDITION (the path is not a socket), or the errno-derived error of
  // socket()/bind() naming the path.
  static Result<std::unique_ptr<EventReceiver>> Start(EventReceiverOptions options);

  // Stop()s, then removes the socket file if it is still the one this receiver bound.
  ~EventReceiver();
  EventReceiver(const EventReceiver&) = delete;
  EventReceiver& operator=(const EventReceiver&) = delete;

  // Delivers every datagram already queued, then stops the thread. Idempotent.
  void Stop();

  EventReceiverStats Stats() const;
  const std::string& socket_path() const { return options_.socket_path; }
  // The receive buffer the kernel granted (bytes, as getsockopt(SO_RCVBUF) reports it).
  int receive_buffer_bytes() const { return granted_rcvbuf_bytes_; }
  // net.unix.max_dgram_qlen when this socket was made (-1 if unreadable).
  int max_datagram_queue() const { return max_dgram_qlen_; }
  // The drain interval in effect (options resolved; 0: sleeps on the socket).
  int64_t drain_interval_ns() const { return options_.drain_interval_ns; }

 private:
  explicit EventReceiver(EventReceiverOptions options);
  Status Bind();
  struct Batch;  // recvmmsg() buffers, owned by Run()
  void Run();
  // Counts one datagram as handled, after its verdict's counters (see Stats).
  void CountHandled();
  // Reads and handles datagrams until the socket's queue is empty.
  void Drain(Batch* batch);
  // One warning per receiver, for the first goodbye that reports dropped events.
  void WarnSenderDrops(const wire::ParsedEvent& goodbye);
  void Reject(wire::RejectReason reason, int32_t sender_pid, const std::byte* data, size_t size);

  EventReceiverOptions options_;
  int socket_fd_ = -1;
  int wake_fd_ = -1;  // eventfd written by Stop()
  uint64_t socket_inode_ = 0;
  int granted_rcvbuf_bytes_ = 0;
  int max_dgram_qlen_ = -1;
  std::atomic<bool> warned_sender_drops_{false};
  std::thread thread_;
  std::atomic<bool> stopped_{false};
  RateLimitedLog reject_log_;
  int64_t next_reject_detail_ns_ = 0;  // receiver thread only

  std::atomic<uint64_t> datagrams_{0};
  std::atomic<uint64_t> accepted_{0};
  std::array<std::atomic<uint64_t>, wire::kRejectReasonCount> rejected_{};
  std::atomic<uint64_t> names_repaired_{0};
  std::atomic<uint64_t> receive_errors_{0};
};

}  // namespace titan
