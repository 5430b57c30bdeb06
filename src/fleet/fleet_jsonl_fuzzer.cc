// Fuzzes ReadFleetJsonl: any input ends in a history or an error with every bad record counted,
// and a history written back with WriteFleetJsonl reads back to the same events.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/check.h"
#include "src/fleet/fleet_jsonl.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::fleet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  HistoryBuilder builder;
  ReadFleetJsonl(text, "fuzz", &builder);
  auto history = std::move(builder).Build();
  if (!history.ok()) return 0;
  const std::string written = WriteFleetJsonl(*history);
  HistoryBuilder again;
  ReadFleetJsonl(written, "written", &again);
  TITAN_CHECK(again.stats().skipped.empty()) << again.stats().examples.front();
  auto reread = std::move(again).Build();
  TITAN_CHECK(reread.ok());
  TITAN_CHECK(reread->events().size() == history->events().size());
  for (size_t i = 0; i < history->events().size(); ++i) {
    TITAN_CHECK(reread->events()[i].kind == history->events()[i].kind);
  }
  return 0;
}
