// Fuzzes the --inject parser: any bytes must give a value or an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/supervisor/inject.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = titan::supervisor::ParseInjection(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (r.ok() && r->kind == titan::supervisor::InjectKind::kSlow && r->factor <= 1.0)
    __builtin_trap();
  return 0;
}
