// Fuzzes ReadCapacity (titan load sweep JSON against an SLO): a capacity or an error; a
// capacity's knee is a rate that was probed and its goodput is not negative.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/base/check.h"
#include "src/plan/capacity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace titan::plan;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto capacity = ReadCapacity(text, "fuzz", size % 2 ? "" : "p99_ttft=500ms,errors=1%");
  if (!capacity.ok()) return 0;
  TITAN_CHECK(capacity->probes > 0);
  TITAN_CHECK(!(capacity->goodput_rps < 0));
  return 0;
}
