// One way for a subcommand to end on an error Status: "titan plan: message" on stderr, and the
// exit code the message deserves: 2 (kExitUsageError) for bad input the user can fix
// (INVALID_ARGUMENT, NOT_FOUND), 1 for everything else. Thread safety: writes stderr.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "src/base/command_line.h"
#include "src/base/status.h"

namespace titan {

inline int ReportCommandFailure(std::string_view command, const Status& status) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(command.size()), command.data(),
               std::string(status.message()).c_str());
  return status.code() == StatusCode::kInvalidArgument || status.code() == StatusCode::kNotFound
             ? kExitUsageError
             : 1;
}

}  // namespace titan
