// One way for every titan subcommand to parse its flags with CLI11 (header-only): --help prints
// the help and exits 0; any usage error (an unknown flag, a value out of range, a missing
// argument) prints CLI11's message and exits 2, titan's usage exit code, rather than CLI11's own
// codes (105 for a value out of range, 106 for a missing argument ...).
//
//   if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
#pragma once

#include <optional>

#include <CLI/CLI.hpp>

namespace titan {

inline constexpr int kExitUsageError = 2;

inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsageError;
  }
  return std::nullopt;
}

}  // namespace titan
