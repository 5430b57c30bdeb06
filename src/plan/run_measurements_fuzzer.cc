// Fuzzes ParseRunFiles (titan run's ledger.json and events.jsonl): measurements or an error.
// The input is split at its first NUL byte into the two files.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/check.h"
#include "src/plan/run_measurements.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::plan;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t cut = text.find('\0');
  const std::string_view ledger = text.substr(0, cut);
  const std::string_view events = cut == std::string_view::npos ? "" : text.substr(cut + 1);
  auto m = ParseRunFiles(ledger, events, "fuzz");
  if (!m.ok()) return 0;
  TITAN_CHECK(m->step_seconds > 0);
  return 0;
}
