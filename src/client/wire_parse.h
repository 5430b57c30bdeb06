// Validation of event datagrams (wire.h) received from outside: a datagram comes from any
// process on the node that can write to the socket, so every field is checked and a bad one is
// a counted rejection with a reason, never a crash or a guess.
//
// Checks, in order: size exactly sizeof(wire::Event) (64), magic, version, kind in
// [1, kMaxKind], name NUL-terminated within its 24 bytes, rank >= -1, time_ns > 0 and not more
// than kMaxFutureSkewNs ahead of the receiver's clock; then plausibility: time_ns not more than
// kMaxPastSkewNs behind it (a 1970 timestamp made 57-year steps), step >= -1, value in
// [0, kMaxEventValue] (bytes or counts; INT64_MAX bytes broke the byte counters). Names are
// repaired, not rejected:
// control bytes (< 0x20, 0x7f) and bytes that are not part of valid UTF-8 become '?', and the
// event says so (name_repaired).
//
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "src/base/status.h"
#include "src/client/wire.h"

namespace titan::wire {

enum class RejectReason : uint8_t {
  kTooShort = 0,       // fewer than 64 bytes
  kTooLong,            // more than 64 bytes (oversized; detected with MSG_TRUNC)
  kBadMagic,           // not "TTN1": not a titan client
  kBadVersion,         // another wire version
  kUnknownKind,        // kind 0 or > kMaxKind (e.g. a newer client)
  kNameNotTerminated,  // no NUL within the 24 name bytes
  kBadRank,            // rank < -1
  kBadTime,            // time_ns <= 0
  kFutureTime,         // time_ns more than kMaxFutureSkewNs after the receiver's clock
  kPastTime,           // time_ns more than kMaxPastSkewNs before the receiver's clock
  kBadStep,            // step < -1
  kBadValue,           // value < 0 or > kMaxEventValue
};
inline constexpr size_t kRejectReasonCount = 12;

// A stable snake_case name per reason, for metric labels and logs ("too_short", ...).
std::string_view RejectReasonName(RejectReason reason);
// "hello", "step_begin", ...; "unknown" outside [1, kMaxKind].
std::string_view EventKindName(EventKind kind);

// Events stamped further in the sender's future than this are rejected (clock garbage).
inline constexpr int64_t kMaxFutureSkewNs = int64_t{24} * 3600 * 1'000'000'000;
inline constexpr int64_t kMaxPastSkewNs = int64_t{24} * 3600 * 1'000'000'000;
inline constexpr int64_t kMaxEventValue = int64_t{1} << 50;  // 1 PiB

// A validated event. Plain value, no heap.
struct ParsedEvent {
  EventKind kind = EventKind::kHello;
  int32_t rank = -1;
  int32_t claimed_pid = 0;  // the pid the sender wrote into the datagram
  int32_t sender_pid = 0;   // from SCM_CREDENTIALS (kernel-verified, in the receiver's pid
                            // namespace); 0 when unknown
  uint32_t sender_uid = 0;  // from SCM_CREDENTIALS; meaningful only when sender_pid > 0
  int64_t step = -1;
  int64_t time_ns = 0;  // sender's CLOCK_REALTIME
  int64_t value = 0;
  int64_t received_ns = 0;  // receiver's CLOCK_REALTIME when read (set by EventReceiver)
  bool name_repaired = false;
  uint8_t name_size = 0;
  std::array<char, kNameBytes> name_bytes{};

  std::string_view name() const { return std::string_view(name_bytes.data(), name_size); }
  // The kernel-verified pid when known, else the claimed one.
  int32_t pid() const { return sender_pid > 0 ? sender_pid : claimed_pid; }
};

// The receiver's fast path: no allocation. On success fills *out (all fields the datagram
// carries; sender_* and received_ns are left as they were) and returns nullopt; otherwise
// returns why the datagram was rejected and leaves *out unspecified.
std::optional<RejectReason> ParseEventInto(std::span<const std::byte> datagram, int64_t now_ns,
                                           ParsedEvent* out);

// The same check with an INVALID_ARGUMENT error that names the reason and the offending value,
// e.g. "event datagram rejected (bad_magic): magic 0x00000000 is not 0x314e5454 ...".
// `now_ns` is the receiver's CLOCK_REALTIME (the overload without it reads the clock).
Result<ParsedEvent> ParseEventDatagram(std::span<const std::byte> datagram, int64_t now_ns);
Result<ParsedEvent> ParseEventDatagram(std::span<const std::byte> datagram);

}  // namespace titan::wire
