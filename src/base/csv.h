// CSV output: one field quoted per RFC 4180 when it must be (it holds a comma, a quote or a
// newline; quotes inside are doubled), else as it is — the way pandas writes, so titan's tables
// compare byte for byte with HTA's. Pure and thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace titan {

std::string CsvField(std::string_view s);

}  // namespace titan
