// Element types of checkpointed tensors and their names in the manifest ("float32", ...).
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace titan::checkpoint {

enum class DType : uint8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt16,
  kInt32,
  kInt64,
  kBool,
  kComplex64,
  kComplex128,
};

// Manifest name, e.g. "bfloat16". These names match torch's dtype names without "torch.".
std::string_view DTypeName(DType dtype);
// Inverse of DTypeName; nullopt for unknown names.
std::optional<DType> ParseDType(std::string_view name);
// Bytes per element.
size_t DTypeSize(DType dtype);

}  // namespace titan::checkpoint
