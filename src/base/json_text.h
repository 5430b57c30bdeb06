// JsonText: nlohmann::json's dump() that never throws. Strings from outside (a node name, a
// reason, a field of a user's file) may hold invalid UTF-8, on which dump() throws
// type_error 316; here each invalid byte becomes U+FFFD instead.
// Thread safety: pure function.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace titan {

// `indent` as dump()'s: -1 compact, N spaces per level otherwise.
inline std::string JsonText(const nlohmann::json& value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace titan
