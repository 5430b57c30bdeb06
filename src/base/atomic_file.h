// One checked, atomic way to write a whole file: the content goes to a temporary file beside
// `path` (unique per process and call), every write is checked (a full disk is an error, not a
// truncated file reported as success), and only a complete file is renamed over `path`. On any
// error the temporary file is removed and `path` keeps its previous content.
//
// Thread safety: safe from any thread; concurrent writers of one path: the last rename wins.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"

namespace titan {

// "-" writes to standard output instead (not atomic, still checked).
Status WriteFileAtomically(const std::string& path, std::string_view content);

}  // namespace titan
