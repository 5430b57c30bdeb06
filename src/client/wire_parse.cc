#include "src/client/wire_parse.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "src/base/clock.h"

namespace titan::wire {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the wire format is little-endian; add byte swapping for this host");

// Length of the valid UTF-8 sequence starting at s[i] (1..4), or 0 if it is not one.
size_t Utf8SequenceBytes(const unsigned char* s, size_t size, size_t i) {
  const unsigned char lead = s[i];
  if (lead < 0x80) return 1;
  size_t length;
  unsigned char min_second = 0x80, max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;  // overlong
    if (lead == 0xED) max_second = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;  // overlong
    if (lead == 0xF4) max_second = 0x8F;  // > U+10FFFF
  } else {
    return 0;
  }
  if (i + length > size) return 0;
  if (s[i + 1] < min_second || s[i + 1] > max_second) return 0;
  for (size_t k = 2; k < length; ++k) {
    if ((s[i + k] & 0xC0) != 0x80) return 0;
  }
  return length;
}

// Copies the name's `size` bytes into out, replacing control bytes and invalid UTF-8 with '?'.
void CopyName(const char* name, size_t size, ParsedEvent* out) {
  const auto* s = reinterpret_cast<const unsigned char*>(name);
  out->name_repaired = false;
  size_t i = 0;
  while (i < size) {
    const size_t n = Utf8SequenceBytes(s, size, i);
    if (n == 0 || (n == 1 && (s[i] < 0x20 || s[i] == 0x7F))) {
      out->name_bytes[i] = '?';
      out->name_repaired = true;
      ++i;
      continue;
    }
    std::memcpy(&out->name_bytes[i], &s[i], n);
    i += n;
  }
  out->name_size = static_cast<uint8_t>(size);
}

std::string RejectDetail(RejectReason reason, std::span<const std::byte> datagram,
                         const Event& event, int64_t now_ns) {
  switch (reason) {
    case RejectReason::kTooShort:
    case RejectReason::kTooLong:
      return fmt::format("{} bytes, expected exactly {}", datagram.size(), sizeof(Event));
    case RejectReason::kBadMagic:
      return fmt::format(
          "magic {:#010x} is not {:#010x} (\"TTN1\"); the sender is not a titan "
          "client",
          event.magic, kMagic);
    case RejectReason::kBadVersion:
      return fmt::format(
          "wire version {}, this receiver understands {}; use matching titan "
          "client and agent versions",
          event.version, kVersion);
    case RejectReason::kUnknownKind:
      return fmt::format(
          "kind {} is not in [1, {}]; a newer client may send kinds this agent "
          "does not know",
          event.kind, kMaxKind);
    case RejectReason::kNameNotTerminated:
      return fmt::format("name has no NUL within its {} bytes", kNameBytes);
    case RejectReason::kBadRank:
      return fmt::format("rank {} is below -1", event.rank);
    case RejectReason::kBadTime:
      return fmt::format("time_ns {} is not positive", event.time_ns);
    case RejectReason::kFutureTime:
      return fmt::format(
          "time_ns {} is {:.1f} s ahead of the receiver's clock (limit {} s); "
          "check the sender's clock",
          event.time_ns, NsToSeconds(event.time_ns - now_ns), kMaxFutureSkewNs / kNsPerSecond);
    case RejectReason::kPastTime:
      return fmt::format(
          "time_ns {} is {:.0f} s behind the receiver's clock (limit {} s); check the sender's "
          "clock",
          event.time_ns, NsToSeconds(now_ns - event.time_ns), kMaxPastSkewNs / kNsPerSecond);
    case RejectReason::kBadStep:
      return fmt::format("step {} is below -1", event.step);
    case RejectReason::kBadValue:
      return fmt::format("value {} is not in [0, {}]", event.value, kMaxEventValue);
  }
  return "unknown reason";
}

}  // namespace

std::string_view RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kTooShort:
      return "too_short";
    case RejectReason::kTooLong:
      return "too_long";
    case RejectReason::kBadMagic:
      return "bad_magic";
    case RejectReason::kBadVersion:
      return "bad_version";
    case RejectReason::kUnknownKind:
      return "unknown_kind";
    case RejectReason::kNameNotTerminated:
      return "name_not_terminated";
    case RejectReason::kBadRank:
      return "bad_rank";
    case RejectReason::kBadTime:
      return "bad_time";
    case RejectReason::kFutureTime:
      return "future_time";
    case RejectReason::kPastTime:
      return "past_time";
    case RejectReason::kBadStep:
      return "bad_step";
    case RejectReason::kBadValue:
      return "bad_value";
  }
  return "unknown";
}

std::string_view EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kHello:
      return "hello";
    case EventKind::kStepBegin:
      return "step_begin";
    case EventKind::kStepEnd:
      return "step_end";
    case EventKind::kCheckpointBegin:
      return "checkpoint_begin";
    case EventKind::kCheckpointEnd:
      return "checkpoint_end";
    case EventKind::kMark:
      return "mark";
    case EventKind::kGoodbye:
      return "goodbye";
    case EventKind::kHeartbeat:
      return "heartbeat";
    case EventKind::kCheckpointCommitted:
      return "checkpoint_committed";
    case EventKind::kCheckpointDurable:
      return "checkpoint_durable";
  }
  return "unknown";
}

namespace {
// Validates `datagram`, copying it into *event once its size is right.
std::optional<RejectReason> Check(std::span<const std::byte> datagram, int64_t now_ns,
                                  Event* event) {
  if (datagram.size() < sizeof(Event)) return RejectReason::kTooShort;
  if (datagram.size() > sizeof(Event)) return RejectReason::kTooLong;
  std::memcpy(event, datagram.data(), sizeof(Event));
  if (event->magic != kMagic) return RejectReason::kBadMagic;
  if (event->version != kVersion) return RejectReason::kBadVersion;
  if (event->kind == 0 || event->kind > kMaxKind) return RejectReason::kUnknownKind;
  if (std::memchr(event->name, '\0', kNameBytes) == nullptr) {
    return RejectReason::kNameNotTerminated;
  }
  if (event->rank < -1) return RejectReason::kBadRank;
  if (event->time_ns <= 0) return RejectReason::kBadTime;
  const int64_t latest_ns = now_ns > std::numeric_limits<int64_t>::max() - kMaxFutureSkewNs
                                ? std::numeric_limits<int64_t>::max()
                                : now_ns + kMaxFutureSkewNs;
  if (event->time_ns > latest_ns) return RejectReason::kFutureTime;
  if (now_ns - kMaxPastSkewNs > event->time_ns) return RejectReason::kPastTime;
  if (event->step < -1) return RejectReason::kBadStep;
  if (event->value < 0 || event->value > kMaxEventValue) return RejectReason::kBadValue;
  return std::nullopt;
}
}  // namespace

std::optional<RejectReason> ParseEventInto(std::span<const std::byte> datagram, int64_t now_ns,
                                           ParsedEvent* out) {
  Event event;
  if (auto reason = Check(datagram, now_ns, &event)) return reason;
  out->kind = static_cast<EventKind>(event.kind);
  out->rank = event.rank;
  out->claimed_pid = event.pid;
  out->step = event.step;
  out->time_ns = event.time_ns;
  out->value = event.value;
  CopyName(event.name, std::strlen(event.name), out);
  return std::nullopt;
}

Result<ParsedEvent> ParseEventDatagram(std::span<const std::byte> datagram, int64_t now_ns) {
  ParsedEvent parsed;
  if (auto reason = ParseEventInto(datagram, now_ns, &parsed)) {
    Event event{};
    std::memcpy(&event, datagram.data(), std::min(datagram.size(), sizeof(Event)));
    return InvalidArgumentError(fmt::format("event datagram rejected ({}): {}",
                                            RejectReasonName(*reason),
                                            RejectDetail(*reason, datagram, event, now_ns)));
  }
  return parsed;
}

Result<ParsedEvent> ParseEventDatagram(std::span<const std::byte> datagram) {
  return ParseEventDatagram(datagram, WallNowNs());
}

}  // namespace titan::wire
