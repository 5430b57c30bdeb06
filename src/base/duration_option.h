// AddDurationOption: a CLI11 flag in titan's one duration syntax (src/base/duration.h: "100ms",
// "2.5s", "2m", or a bare number of seconds as before), stored as nanoseconds in *ns. The value
// *ns holds when the flag is added is its default (shown in --help as a duration). A value that
// does not parse, or lies outside [min_ns, max_ns], is a usage error naming the flag, the value
// and the range: ParseCommandLine (src/base/command_line.h) turns it into exit code 2.
// `*ns` must outlive the parse. min_ns = 0 allows "0" (a delay that may be off).
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "src/base/duration.h"

namespace titan {

inline CLI::Option* AddDurationOption(CLI::App& app, const std::string& name, int64_t* ns,
                                      const std::string& help, int64_t min_ns, int64_t max_ns) {
  const std::string flag = name.substr(0, name.find(','));
  auto parse = [=](const std::string& text) {
    int64_t value = 0;
    const bool ok =
        min_ns == 0 ? ParseDurationOrZeroNs(text, &value) : ParseDurationNs(text, &value);
    if (!ok || value < min_ns || value > max_ns) {
      throw CLI::ValidationError(
          flag, "'" + text + "': expected a duration from " + FormatDuration(min_ns) + " to " +
                    FormatDuration(max_ns) + " (e.g. 500ms, 2.5s, 2m; a bare number is seconds)");
    }
    *ns = value;
  };
  return app.add_option_function<std::string>(name, parse, help)
      ->type_name("DURATION")
      ->default_str(FormatDuration(*ns));
}

}  // namespace titan
