// Built-in scenarios, usable by name wherever a scenario file is (`titan sim llama3-16k`) and
// as `base:` of a scenario file. Each is YAML text that goes through the same parser as files.
// Their sources and assumptions are written in the text (see presets.cc, docs/sim.md).
#pragma once

#include <string>
#include <string_view>

namespace titan::sim {

// The preset's YAML text, or nullptr if there is no preset of that name.
const char* FindPreset(std::string_view name);
// "llama3-16k, meta-rsc, ..." for help and error messages.
std::string PresetNames();

}  // namespace titan::sim
