// Fuzzes ParseDetectorSpec and MakeDetector with arbitrary text: no crash, every accepted spec
// builds a detector, and every error is INVALID_ARGUMENT with a message.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/detect/detector.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  titan::Result<titan::DetectorSpec> spec = titan::ParseDetectorSpec(text);
  if (!spec.ok()) {
    if (spec.status().code() != titan::StatusCode::kInvalidArgument) __builtin_trap();
    if (spec.status().message().empty()) __builtin_trap();
    return 0;
  }
  titan::Result<std::unique_ptr<titan::Detector>> detector = titan::MakeDetector(*spec);
  if (!detector.ok()) __builtin_trap();  // Parse validated it: building must succeed
  titan::Detection d;
  for (int i = 0; i < 64; ++i) (void)(*detector)->Update(i, i % 7 == 0 ? 100.0 : 1.0, &d);
  return 0;
}
