// The event datagram: what a training process sends to `titan agent` (and `titan run`) through
// a Unix datagram socket. One event per datagram, fixed 64 bytes, little-endian, no pointers.
//
// Socket addresses: the environment variable TITAN_AGENT_SOCKET holds one or more filesystem
// paths separated by ':' (at most kMaxSockets); the client sends every event to each of them.
// Unset: kDefaultSocketPath. `titan run` prepends its own socket for the workers it launches.
//
// Compatibility: `magic` and `version` are checked; receivers reject other versions (counted),
// never guess. New kinds may be added; receivers count unknown kinds and drop them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace titan::wire {

inline constexpr uint32_t kMagic = 0x314E5454;  // "TTN1" little-endian
inline constexpr uint16_t kVersion = 1;
inline constexpr const char* kSocketEnv = "TITAN_AGENT_SOCKET";
inline constexpr const char* kDefaultSocketPath = "/tmp/titan-agent.sock";
inline constexpr int kMaxSockets = 4;
inline constexpr size_t kNameBytes = 24;

enum class EventKind : uint16_t {
  kHello = 1,            // a process announces (rank, pid); name = job or script name
  kStepBegin = 2,        // step = the step number starting now
  kStepEnd = 3,          // step = the step number that just finished
  kCheckpointBegin = 4,  // step = training step being saved
  kCheckpointEnd = 5,    // value = bytes written (or 0); step as in begin; name kStagedTag:
                         // an async save returned, kCheckpointCommitted follows
  kMark = 6,             // a user-named instant; name = the mark
  kGoodbye = 7,          // the process is exiting cleanly; value = events it dropped
  kHeartbeat = 8,        // liveness without step progress (e.g. long data loading)
  // A save's background part ended: step as in begin; value = bytes this rank wrote. Rank 0:
  // the checkpoint is committed; another rank: its data and marker are written.
  kCheckpointCommitted = 9,
  kCheckpointDurable = 10,  // rank 0: committed at the durable mirror; value = bytes copied
};
inline constexpr uint16_t kMaxKind = 10;
// The tag of a kCheckpointEnd that ends only the blocking part of an asynchronous save.
inline constexpr const char* kStagedTag = "staged";

struct Event {
  uint32_t magic;         // kMagic
  uint16_t version;       // kVersion
  uint16_t kind;          // EventKind
  int32_t rank;           // global rank, -1 if unknown
  int32_t pid;            // sender's pid
  int64_t step;           // step number, -1 if not applicable
  int64_t time_ns;        // sender's CLOCK_REALTIME, ns since the epoch
  int64_t value;          // kind-specific (checkpoint_end: bytes)
  char name[kNameBytes];  // NUL-padded UTF-8; for kMark, kHello, kCheckpoint*
};
static_assert(sizeof(Event) == 64, "the wire event is 64 bytes");

// Fills everything but time_ns; name is truncated to kNameBytes-1 bytes.
inline Event MakeEvent(EventKind kind, int32_t rank, int32_t pid, int64_t step, int64_t value,
                       const char* name) {
  Event e{};
  e.magic = kMagic;
  e.version = kVersion;
  e.kind = static_cast<uint16_t>(kind);
  e.rank = rank;
  e.pid = pid;
  e.step = step;
  e.value = value;
  if (name != nullptr) {
    size_t n = std::strlen(name);
    if (n > kNameBytes - 1) n = kNameBytes - 1;
    std::memcpy(e.name, name, n);
  }
  return e;
}

}  // namespace titan::wire
