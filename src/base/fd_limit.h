// Raises this process's open-file soft limit to its hard limit, for servers and clients that
// hold thousands of connections. Returns the limit now in force. Thread safety: call at start.
#pragma once

#include <cstdint>

namespace titan {

uint64_t RaiseOpenFileLimit();

}  // namespace titan
