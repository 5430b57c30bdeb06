// Parsers of what the API server sends the controller (outside input): list answers, watch
// event lines, and the Node fields the controller's decisions use. Malformed input is
// INVALID_ARGUMENT naming `origin`; nothing here throws or trusts the nesting depth.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::k8s {

struct ListPage {
  std::vector<nlohmann::json> items;  // each an object with metadata.name
  std::string resource_version;       // metadata.resourceVersion: where a watch starts
  std::string continue_token;         // metadata.continue: more pages
};

// A list answer ({"kind": "NodeList", "metadata": {...}, "items": [...]}).
Result<ListPage> ParseListPage(std::string_view body, std::string_view origin);

struct WatchEvent {
  std::string type;              // ADDED, MODIFIED, DELETED, BOOKMARK or ERROR
  nlohmann::json object;         // ERROR: a Status object (code 410: resourceVersion too old)
  std::string resource_version;  // the object's metadata.resourceVersion ("" for ERROR)
};

// One line of a watch stream.
Result<WatchEvent> ParseWatchEvent(std::string_view line, std::string_view origin);

// What the controller knows about a node.
struct NodeView {
  std::string name;
  bool ready = false;          // condition Ready == True
  bool unschedulable = false;  // spec.unschedulable (cordoned)
  bool titan_tainted = false;  // has the titan.io/unhealthy taint
  std::string report;          // titan.io/report-unhealthy annotation: a cordon request
  int64_t gpus = 0;            // status.allocatable["nvidia.com/gpu"], 0 if none
  // Not for new pods: not ready, cordoned, tainted by titan, or reported bad.
  bool Usable() const { return ready && !unschedulable && !titan_tainted && report.empty(); }
};

Result<NodeView> ParseNodeView(const nlohmann::json& node, std::string_view origin);

}  // namespace titan::k8s
