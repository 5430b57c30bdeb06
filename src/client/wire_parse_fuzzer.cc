// Fuzzes the event datagram parser with arbitrary bytes: it must never crash, and an accepted
// event must satisfy every documented check.
#include <cstddef>
#include <cstdint>
#include <span>

#include "src/base/check.h"
#include "src/client/wire_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using titan::wire::ParsedEvent;
  const auto bytes = std::as_bytes(std::span<const uint8_t>(data, size));
  constexpr int64_t kNowNs = int64_t{1'800'000'000} * 1'000'000'000;
  ParsedEvent event;
  const auto reason = titan::wire::ParseEventInto(bytes, kNowNs, &event);
  auto result = titan::wire::ParseEventDatagram(bytes, kNowNs);
  TITAN_CHECK(result.ok() == !reason.has_value()) << "the two entry points disagree";
  if (!reason) {
    TITAN_CHECK(size == sizeof(titan::wire::Event)) << size;
    TITAN_CHECK(event.rank >= -1) << event.rank;
    TITAN_CHECK(event.time_ns > 0 && event.time_ns <= kNowNs + titan::wire::kMaxFutureSkewNs)
        << event.time_ns;
    TITAN_CHECK(event.name_size < titan::wire::kNameBytes) << int(event.name_size);
    for (char c : event.name()) {
      TITAN_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) << "control byte in name";
    }
  } else {
    TITAN_CHECK(!result.status().message().empty()) << "rejection without a message";
  }
  return 0;
}
