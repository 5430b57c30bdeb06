// Small helpers shared by the parsers of titan load's input files (traces, prompt files): a
// position for error messages, a printable excerpt of bad input, and a key's position in a
// JSON text. Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace titan::load {

// 1-based line and column of a field, for "file:line:column: ..." errors.
struct Pos {
  size_t line;
  size_t column;
};

// At most 40 bytes of `value`, control characters shown as '?', "..." when cut.
std::string Shown(std::string_view value);

// The offset of `"key"` in `json` (its opening quote), or npos; allocation-free.
size_t FindKey(std::string_view json, std::string_view key);

}  // namespace titan::load
