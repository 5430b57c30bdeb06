// CSV output: one field quoted per RFC 4180 when it must be (it holds a comma, a quote or a
// newline; quotes inside are doubled), else as it is — the way pandas writes, so titan's tables
// compare byte for byte with HTA's. Pure and thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace titan {

std::string CsvField(std::string_view s);

// Splits one CSV record (a line without its '\n'; a trailing '\r' is dropped) into its fields,
// unquoting RFC 4180 quoted fields. False when a quoted field is not closed on the line or a
// quote is followed by anything but a comma (a field that spans lines is not supported).
bool SplitCsvRecord(std::string_view line, std::vector<std::string>* fields);

}  // namespace titan
