// Fuzzes the AWS settings-file parser (outside input: ~/.aws/credentials and ~/.aws/config).
// It must never crash or hang; every accepted key is non-empty and trimmed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/s3/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto ini = titan::s3::ParseIni(input, "fuzz");
  if (ini.ok()) {
    for (const auto& [section, values] : *ini) {
      for (const auto& [key, value] : values) {
        if (key.empty() || key.front() == ' ' || key.back() == ' ') __builtin_trap();
      }
    }
  }
  return 0;
}
