// YAML <-> JSON for Kubernetes documents. Kubernetes objects are JSON on the wire and YAML in
// files; titan holds them as nlohmann::json and converts at the edges.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::k8s {

// Parses every document of a YAML stream (outside input: a user's file) into JSON: plain
// scalars become integers, floats, booleans (true/false) or null (~, null, empty) when they read
// as such, quoted scalars stay strings. Empty documents are skipped. Nesting deeper than
// kMaxJsonDepth, anchors that expand beyond `max_nodes` nodes and malformed YAML are
// INVALID_ARGUMENT naming `origin` (and the line for syntax errors).
Result<std::vector<nlohmann::json>> YamlToJson(std::string_view text, std::string_view origin,
                                               size_t max_nodes = 1'000'000);

// Writes `docs` as a YAML stream ("---" between documents, each ending in a newline) that
// kubectl (go-yaml, YAML 1.1) and PyYAML read back to the same JSON: strings that could read as
// another type ("1", "yes", "on", "-1", "") are double-quoted.
std::string JsonToYaml(const std::vector<nlohmann::json>& docs);

}  // namespace titan::k8s
