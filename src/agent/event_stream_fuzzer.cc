// Fuzzes what the agent does with a stream of event datagrams from outside (issue 15 #6): the
// input is cut into records of one byte (seconds the agent's receive clock advances) and one
// 64-byte datagram; each datagram is checked by wire_parse and, when accepted, fed to a
// StepTracker with a small rank table and series bound, so that eviction, series retirement,
// revival and every drop reason are reached. Invariants: the rank table, live series, retired
// series and recorder memory stay within their bounds.
#include <cstddef>
#include <cstdint>
#include <span>

#include "src/agent/step_tracker.h"
#include "src/base/check.h"
#include "src/base/clock.h"
#include "src/client/wire_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan;
  constexpr size_t kMaxRanks = 8;
  constexpr int64_t kNowNs = int64_t{1'800'000'000} * kNsPerSecond;
  RegistryOptions options;
  options.max_series = 60;  // the tracker's own counters plus room for about 6 ranks
  options.max_retired_series = 40;
  options.recorder_duration_ns = 10 * kNsPerSecond;
  options.recorder_budget_bytes = 64 << 10;
  MetricRegistry registry(options);
  WatchedProcesses processes;
  StepTracker tracker(registry, processes, kMaxRanks);

  constexpr size_t kRecord = 1 + sizeof(wire::Event);
  int64_t receive_ns = kNsPerSecond;
  wire::ParsedEvent event;
  for (size_t at = 0; at + kRecord <= size; at += kRecord) {
    receive_ns += int64_t{data[at]} * kNsPerSecond;  // up to 255 s: beyond the idle time
    const auto datagram = std::as_bytes(std::span<const uint8_t>(data + at + 1, kRecord - 1));
    if (wire::ParseEventInto(datagram, kNowNs, &event).has_value()) continue;
    tracker.OnEvent(ToAppEvent(event), receive_ns);
    TITAN_CHECK(tracker.rank_count() <= kMaxRanks) << tracker.rank_count();
    TITAN_CHECK(registry.series_count() <= options.max_series) << registry.series_count();
    TITAN_CHECK(registry.retired_series_count() <= options.max_retired_series)
        << registry.retired_series_count();
    TITAN_CHECK(registry.recorder_bytes() <= options.recorder_budget_bytes)
        << registry.recorder_bytes();
  }
  return 0;
}
