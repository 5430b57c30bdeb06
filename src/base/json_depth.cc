#include "src/base/json_depth.h"

#include <fmt/format.h>

namespace titan {

Status CheckJsonDepth(std::string_view text, std::string_view origin, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) {
        return InvalidArgumentError(fmt::format(
            "{}: JSON nested deeper than {} levels at byte {} (refused before parsing: so deep "
            "a document is corrupt or hostile)",
            origin, max_depth, i));
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return OkStatus();
}

}  // namespace titan
