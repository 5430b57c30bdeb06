#include "src/load/input_text.h"

namespace titan::load {

std::string Shown(std::string_view value) {
  std::string out(value.substr(0, 40));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return value.size() > 40 ? out + "..." : out;
}

size_t FindKey(std::string_view json, std::string_view key) {
  for (size_t at = json.find(key); at != std::string_view::npos; at = json.find(key, at + 1)) {
    if (at > 0 && json[at - 1] == '"' && at + key.size() < json.size() &&
        json[at + key.size()] == '"') {
      return at - 1;
    }
  }
  return std::string_view::npos;
}

}  // namespace titan::load
