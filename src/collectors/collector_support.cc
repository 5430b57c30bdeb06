#include "src/collectors/collector_support.h"

#include "src/base/text.h"

namespace titan::collectors_internal {

int ParseUintFields(std::string_view* rest, uint64_t* out, int max_fields, bool* bad) {
  int parsed = 0;
  while (parsed < max_fields) {
    const std::string_view field = NextField(rest);
    if (field.empty()) break;
    if (!ParseUint64(field, &out[parsed])) {
      *bad = true;
      break;
    }
    ++parsed;
  }
  return parsed;
}

}  // namespace titan::collectors_internal
