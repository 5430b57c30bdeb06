#include "src/client/wire_parse.h"

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/base/clock.h"
#include "src/client/titan_client.h"

namespace titan::wire {
namespace {

constexpr int64_t kNow = int64_t{1'800'000'000} * kNsPerSecond;

Event Valid() {
  Event e = MakeEvent(EventKind::kMark, 3, 1234, 42, 7, "warmup");
  e.time_ns = kNow - 5;
  return e;
}

std::span<const std::byte> Bytes(const Event& e) {
  return std::as_bytes(std::span<const Event, 1>(&e, 1));
}

std::optional<RejectReason> Reason(const Event& e) {
  ParsedEvent out;
  return ParseEventInto(Bytes(e), kNow, &out);
}

TEST(WireParseTest, ValidEventKeepsEveryField) {
  const Event e = Valid();
  Result<ParsedEvent> parsed = ParseEventDatagram(Bytes(e), kNow);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->kind, EventKind::kMark);
  EXPECT_EQ(parsed->rank, 3);
  EXPECT_EQ(parsed->claimed_pid, 1234);
  EXPECT_EQ(parsed->pid(), 1234);  // no credentials: the claimed pid
  EXPECT_EQ(parsed->step, 42);
  EXPECT_EQ(parsed->value, 7);
  EXPECT_EQ(parsed->time_ns, kNow - 5);
  EXPECT_EQ(parsed->name(), "warmup");
  EXPECT_FALSE(parsed->name_repaired);
}

TEST(WireParseTest, EveryKindInRangeIsAccepted) {
  for (uint16_t kind = 1; kind <= kMaxKind; ++kind) {
    Event e = Valid();
    e.kind = kind;
    EXPECT_EQ(Reason(e), std::nullopt) << kind;
    EXPECT_NE(EventKindName(static_cast<EventKind>(kind)), "unknown") << kind;
  }
}

TEST(WireParseTest, WrongSizesAreRejected) {
  const Event e = Valid();
  std::vector<std::byte> longer(sizeof(Event) + 1);
  std::memcpy(longer.data(), &e, sizeof(Event));
  ParsedEvent out;
  EXPECT_EQ(ParseEventInto(longer, kNow, &out), RejectReason::kTooLong);
  EXPECT_EQ(ParseEventInto(Bytes(e).first(63), kNow, &out), RejectReason::kTooShort);
  EXPECT_EQ(ParseEventInto({}, kNow, &out), RejectReason::kTooShort);
}

TEST(WireParseTest, EachBadFieldHasItsOwnReason) {
  Event e = Valid();
  e.magic = 0;
  EXPECT_EQ(Reason(e), RejectReason::kBadMagic);
  e = Valid();
  e.version = 2;
  EXPECT_EQ(Reason(e), RejectReason::kBadVersion);
  e = Valid();
  e.kind = 0;
  EXPECT_EQ(Reason(e), RejectReason::kUnknownKind);
  e.kind = kMaxKind + 1;
  EXPECT_EQ(Reason(e), RejectReason::kUnknownKind);
  e = Valid();
  std::memset(e.name, 'x', kNameBytes);
  EXPECT_EQ(Reason(e), RejectReason::kNameNotTerminated);
  e = Valid();
  e.rank = -2;
  EXPECT_EQ(Reason(e), RejectReason::kBadRank);
  e.rank = -1;
  EXPECT_EQ(Reason(e), std::nullopt);
  e = Valid();
  e.time_ns = -1;
  EXPECT_EQ(Reason(e), RejectReason::kBadTime);
  e.time_ns = 0;
  EXPECT_EQ(Reason(e), RejectReason::kBadTime);
  e.time_ns = kNow + kMaxFutureSkewNs + 1;
  EXPECT_EQ(Reason(e), RejectReason::kFutureTime);
  e.time_ns = kNow + kMaxFutureSkewNs;
  EXPECT_EQ(Reason(e), std::nullopt);
  e.time_ns = INT64_MAX;
  EXPECT_EQ(Reason(e), RejectReason::kFutureTime);
}

TEST(WireParseTest, ImplausibleValuesAreRejectedNotRecorded) {
  // Each of these was accepted and became data: a 57-year step, 9.2e18 checkpoint bytes.
  Event e = Valid();
  e.time_ns = 1;  // 1970
  EXPECT_EQ(Reason(e), RejectReason::kPastTime);
  e.time_ns = kNow - kMaxPastSkewNs;
  EXPECT_EQ(Reason(e), std::nullopt);
  e = Valid();
  e.step = -2;
  EXPECT_EQ(Reason(e), RejectReason::kBadStep);
  e.step = -1;  // "no step"
  EXPECT_EQ(Reason(e), std::nullopt);
  e = Valid();
  e.value = INT64_MAX;
  EXPECT_EQ(Reason(e), RejectReason::kBadValue);
  e.value = -1;
  EXPECT_EQ(Reason(e), RejectReason::kBadValue);
  e.value = kMaxEventValue;
  EXPECT_EQ(Reason(e), std::nullopt);
  e.value = INT64_MAX;
  Result<ParsedEvent> parsed = ParseEventDatagram(Bytes(e), kNow);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("bad_value"), std::string_view::npos);
}

TEST(WireParseTest, ErrorMessageNamesReasonAndValue) {
  Event e = Valid();
  e.version = 9;
  Result<ParsedEvent> parsed = ParseEventDatagram(Bytes(e), kNow);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("bad_version"), std::string_view::npos);
  EXPECT_NE(parsed.status().message().find("wire version 9"), std::string_view::npos);
}

TEST(WireParseTest, ReasonNamesAreDistinct) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < kRejectReasonCount; ++i) {
    names.insert(RejectReasonName(static_cast<RejectReason>(i)));
  }
  EXPECT_EQ(names.size(), kRejectReasonCount);
  EXPECT_EQ(names.count("unknown"), 0u);
}

TEST(WireParseTest, ControlBytesAndBadUtf8AreReplaced) {
  Event e = Valid();
  std::memset(e.name, 0, kNameBytes);
  std::memcpy(e.name, "a\nb\x7f\xff\xc3", 6);  // newline, DEL, invalid byte, cut sequence
  Result<ParsedEvent> parsed = ParseEventDatagram(Bytes(e), kNow);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->name(), "a?b???");
  EXPECT_TRUE(parsed->name_repaired);

  std::memset(e.name, 0, kNameBytes);
  std::memcpy(e.name, "\xce\xbb-\xe6\xad\xa5", 6);  // "λ-步": valid UTF-8 stays
  parsed = ParseEventDatagram(Bytes(e), kNow);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->name(), "\xce\xbb-\xe6\xad\xa5");
  EXPECT_FALSE(parsed->name_repaired);
}

TEST(ClientNameTest, TruncationKeepsWholeUtf8Characters) {
  // 8 three-byte characters = 24 bytes: 23 allowed -> 7 characters (21 bytes).
  std::string name;
  for (int i = 0; i < 8; ++i) name += "\xe6\xad\xa5";
  EXPECT_EQ(client_internal::Utf8PrefixBytes(name, kNameBytes - 1), 21u);
  EXPECT_EQ(client_internal::Utf8PrefixBytes("short", kNameBytes - 1), 5u);
  EXPECT_EQ(client_internal::Utf8PrefixBytes(std::string(30, 'a'), kNameBytes - 1), 23u);
}

TEST(ClientEnvTest, RankParsing) {
  EXPECT_EQ(client_internal::ParseRankEnv("7"), 7);
  EXPECT_EQ(client_internal::ParseRankEnv(nullptr), -1);
  EXPECT_EQ(client_internal::ParseRankEnv(""), -1);
  EXPECT_EQ(client_internal::ParseRankEnv("7x"), -1);
  EXPECT_EQ(client_internal::ParseRankEnv("-3"), -1);
  EXPECT_EQ(client_internal::ParseRankEnv("99999999999"), -1);
}

}  // namespace
}  // namespace titan::wire
