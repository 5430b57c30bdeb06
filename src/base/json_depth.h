// A nesting bound for JSON from outside input, checked on the text before any tree is built:
// nlohmann::json's parser is iterative, but copying and destroying a tree recurse once per level,
// so ~70,000 nested '[' overflow the stack of any reader (a manifest, an etcd answer, a report
// input). Every parser of outside JSON in titan calls CheckJsonDepth first.
//
// Thread safety: a pure function.
#pragma once

#include <string_view>

#include "src/base/status.h"

namespace titan {

// Default bound: titan's own documents nest fewer than 10 levels; 128 leaves room for user
// metadata inside them.
inline constexpr int kMaxJsonDepth = 128;

// OK when no object or array in `text` is nested deeper than `max_depth` (strings, escapes
// included, are skipped). Otherwise INVALID_ARGUMENT: "<origin>: JSON nested deeper than N
// levels at byte B". O(size), no allocation. Malformed JSON is left to the parser.
Status CheckJsonDepth(std::string_view text, std::string_view origin,
                      int max_depth = kMaxJsonDepth);

}  // namespace titan
