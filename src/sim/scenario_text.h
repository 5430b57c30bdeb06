// Scenario text -> tree. A scenario is a YAML document (parsed by yaml-cpp) or a JSON document
// (parsed by nlohmann-json); both become the same nlohmann::json tree, which ParseScenario
// (scenario.h) validates. Plain YAML scalars become numbers, booleans or null where they read
// as such; quoted scalars stay strings.
//
// Errors are INVALID_ARGUMENT values naming the origin (file or preset) and the line/column; no
// exception leaves these functions. Input is bounded (1 MiB, depth 32, 100,000 nodes after
// alias expansion) so that hostile input cannot exhaust memory or the stack.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::sim {

inline constexpr size_t kMaxScenarioBytes = 1 << 20;

// JSON when the first non-blank character is '{', YAML otherwise. The root must be a mapping.
Result<nlohmann::json> ParseScenarioText(std::string_view text, std::string_view origin);

// `name_or_path` is a built-in preset name (presets.h) or a scenario file path.
Result<nlohmann::json> LoadScenarioTree(const std::string& name_or_path);

// Sets the value at a dotted path ("cluster.spares") creating objects on the way. `value` is
// read as a YAML scalar (number, boolean or string). A numeric step indexes an existing list
// ("failures.causes.0.job_mtbf_hours"). Fails if a step on the way is not a section or list.
Status SetTreePath(nlohmann::json* tree, std::string_view dotted_path, std::string_view value);

}  // namespace titan::sim
