#include "src/cluster/k8s/objects.h"

#include <fmt/format.h>

#include "src/base/json_depth.h"
#include "src/base/text.h"
#include "src/cluster/k8s/node_patch.h"

namespace titan::k8s {

namespace {

using nlohmann::json;

Result<json> ParseJson(std::string_view text, std::string_view origin) {
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(text, origin));
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded()) {
    return InvalidArgumentError(fmt::format("{}: not JSON: '{}'", origin, RemoteText(text, 80)));
  }
  if (!value.is_object()) return InvalidArgumentError(fmt::format("{}: not a JSON object", origin));
  return value;
}

std::string MetadataString(const json& object, const char* key) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto it = meta->find(key);
  return it != meta->end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

Result<ListPage> ParseListPage(std::string_view body, std::string_view origin) {
  TITAN_ASSIGN_OR_RETURN(json list, ParseJson(body, origin));
  auto items = list.find("items");
  if (items == list.end() || !(items->is_array() || items->is_null())) {
    return InvalidArgumentError(fmt::format("{}: a list answer without 'items'", origin));
  }
  ListPage page;
  page.resource_version = MetadataString(list, "resourceVersion");
  page.continue_token = MetadataString(list, "continue");
  if (items->is_array()) {
    for (json& item : *items) {
      if (!item.is_object() || MetadataString(item, "name").empty()) {
        return InvalidArgumentError(fmt::format("{}: an item without metadata.name", origin));
      }
      page.items.push_back(std::move(item));
    }
  }
  return page;
}

Result<WatchEvent> ParseWatchEvent(std::string_view line, std::string_view origin) {
  TITAN_ASSIGN_OR_RETURN(json event, ParseJson(line, origin));
  WatchEvent out;
  auto type = event.find("type");
  auto object = event.find("object");
  if (type == event.end() || !type->is_string() || object == event.end() || !object->is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: a watch event needs a string 'type' and an object 'object'", origin));
  }
  out.type = type->get<std::string>();
  if (out.type != "ADDED" && out.type != "MODIFIED" && out.type != "DELETED" &&
      out.type != "BOOKMARK" && out.type != "ERROR") {
    return InvalidArgumentError(fmt::format("{}: unknown watch event type '{}'", origin, out.type));
  }
  out.object = std::move(*object);
  if (out.type != "ERROR") {
    out.resource_version = MetadataString(out.object, "resourceVersion");
    if (out.type != "BOOKMARK" && MetadataString(out.object, "name").empty()) {
      return InvalidArgumentError(
          fmt::format("{}: {} event for an object without metadata.name", origin, out.type));
    }
  }
  return out;
}

Result<NodeView> ParseNodeView(const json& node, std::string_view origin) {
  NodeView view;
  view.name = MetadataString(node, "name");
  if (view.name.empty())
    return InvalidArgumentError(fmt::format("{}: a Node without a name", origin));
  const json empty = json::object();
  const json& spec = node.contains("spec") && node["spec"].is_object() ? node["spec"] : empty;
  view.unschedulable = spec.value("unschedulable", json(false)) == json(true);
  if (auto taints = spec.find("taints"); taints != spec.end() && taints->is_array()) {
    for (const json& taint : *taints) {
      if (taint.is_object() && taint.value("key", json()) == json(kUnhealthyTaint)) {
        view.titan_tainted = true;
      }
    }
  }
  const json& meta =
      node.contains("metadata") && node["metadata"].is_object() ? node["metadata"] : empty;
  if (auto annotations = meta.find("annotations");
      annotations != meta.end() && annotations->is_object()) {
    if (auto report = annotations->find(kReportAnnotation);
        report != annotations->end() && report->is_string()) {
      view.report = report->get<std::string>();
      if (view.report.empty()) view.report = "reported";
    }
  }
  const json& status =
      node.contains("status") && node["status"].is_object() ? node["status"] : empty;
  if (auto conditions = status.find("conditions");
      conditions != status.end() && conditions->is_array()) {
    for (const json& c : *conditions) {
      if (c.is_object() && c.value("type", json()) == json("Ready")) {
        view.ready = c.value("status", json()) == json("True");
      }
    }
  }
  if (auto allocatable = status.find("allocatable");
      allocatable != status.end() && allocatable->is_object()) {
    if (auto gpus = allocatable->find("nvidia.com/gpu"); gpus != allocatable->end()) {
      int64_t n = 0;
      if ((gpus->is_string() && ParseInt64(gpus->get<std::string>(), &n)) ||
          (gpus->is_number_integer() && (n = gpus->get<int64_t>(), true))) {
        view.gpus = std::max<int64_t>(0, n);
      }
    }
  }
  return view;
}

}  // namespace titan::k8s
