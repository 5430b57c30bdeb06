// Fuzzes ReadDiagnoseVerdict: any input ends in a history or an error, with every bad record
// counted; no crash, hang or unbounded growth.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/check.h"
#include "src/fleet/diagnose_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::fleet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  HistoryBuilder builder;
  ReadDiagnoseVerdict(text, "fuzz", &builder);
  const size_t added = builder.event_count();
  auto history = std::move(builder).Build();
  TITAN_CHECK(history.ok() == (added > 0));
  return 0;
}
