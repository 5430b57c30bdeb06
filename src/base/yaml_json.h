// YAML <-> JSON: titan reads YAML files (sim scenarios, Kubernetes objects, kubeconfigs) as
// nlohmann::json, checks them there, and writes YAML from JSON (titan k8s manifests).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/json_depth.h"
#include "src/base/status.h"

namespace titan {

// Parses every document of a YAML stream (outside input: a user's file) into JSON: plain
// scalars become integers, floats, booleans (true/false) or null (~, null, empty) when they read
// as such, quoted scalars stay strings. Empty documents are skipped. Nesting deeper than
// limits.max_depth, anchors that expand beyond limits.max_nodes nodes, a key given twice in one
// mapping (YAML forbids it; yaml-cpp would keep one silently) and malformed YAML, including the
// streams on which yaml-cpp 0.7's LoadAll never returns, are INVALID_ARGUMENT naming `origin`
// and the line.
struct YamlLimits {
  int max_depth = kMaxJsonDepth;  // levels, the document's own node 1 and scalars included
  size_t max_nodes = 100'000;     // a YAML file titan reads is small; aliases expand here
};
Result<std::vector<nlohmann::json>> YamlToJson(std::string_view text, std::string_view origin,
                                               YamlLimits limits = {});

// Parses `text` without keeping anything, to refuse what yaml-cpp 0.7 mishandles before a
// YAML::Load or LoadAll sees it: a stream on which LoadAll never returns, and which Load reads
// as an empty document (",x", "\"a\", b"), and syntax errors. YamlToJson calls it; any other
// reader of outside YAML must. INVALID_ARGUMENT naming `origin` and the line.
Status CheckYamlStream(std::string_view text, std::string_view origin);

// The JSON value a plain (unquoted) YAML scalar reads as: null (~, null, empty), a boolean
// (true/false in any case), an integer, a number, else the string itself. Also used for
// `key=value` overrides given on a command line (titan sim --set).
nlohmann::json YamlPlainScalar(const std::string& text);

// Writes `docs` as a YAML stream ("---" between documents, each ending in a newline) that
// kubectl (go-yaml, YAML 1.1) and PyYAML read back to the same JSON: strings that could read as
// another type ("1", "yes", "on", "-1", "") are double-quoted.
std::string JsonToYaml(const std::vector<nlohmann::json>& docs);

}  // namespace titan
