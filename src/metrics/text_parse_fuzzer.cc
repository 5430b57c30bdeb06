// Fuzzes the Prometheus text parser (outside input: any server's /metrics). It must never
// crash or read out of bounds; every sample it reports lies inside the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/metrics/text_parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const char* begin = input.data();
  const char* end = begin + input.size();
  titan::ParsePrometheusText(input, [&](const titan::PrometheusSample& s) {
    if (s.name.empty() || s.name.data() < begin || s.name.data() + s.name.size() > end) {
      __builtin_trap();
    }
    if (!s.labels.empty() && (s.labels.data() < begin || s.labels.data() + s.labels.size() > end)) {
      __builtin_trap();
    }
  });
  return 0;
}
