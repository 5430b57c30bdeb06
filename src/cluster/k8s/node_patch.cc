#include "src/cluster/k8s/node_patch.h"

#include <ctime>

#include <fmt/format.h>

namespace titan::k8s {

using nlohmann::json;

std::string TaintValue(std::string_view reason) {
  std::string out;
  for (char c : reason) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
    if (out.size() == 63) break;
  }
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  size_t first = 0;
  while (first < out.size() && !alnum(out[first])) ++first;
  out.erase(0, first);
  return out.empty() ? "unspecified" : out;
}

std::string Rfc3339(int64_t wall_ns) {
  std::time_t seconds = static_cast<std::time_t>(wall_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

Result<std::optional<json>> CordonPatch(const json& node, std::string_view reason, int64_t wall_ns,
                                        bool consume_report) {
  if (!node.is_object() || !node.contains("metadata") || !node["metadata"].is_object()) {
    return InvalidArgumentError("not a Node object: no metadata");
  }
  const json& metadata = node["metadata"];
  if (!metadata.value("name", json()).is_string() ||
      !metadata.value("resourceVersion", json()).is_string()) {
    return InvalidArgumentError("not a Node object: no metadata.name or metadata.resourceVersion");
  }
  const json spec = node.value("spec", json::object());
  if (!spec.is_object()) return InvalidArgumentError("Node spec is not an object");
  json taints = spec.value("taints", json::array());
  if (taints.is_null()) taints = json::array();
  if (!taints.is_array()) return InvalidArgumentError("Node spec.taints is not a list");
  const json annotations = metadata.value("annotations", json::object());
  bool has_report = annotations.is_object() && annotations.contains(kReportAnnotation);

  std::string value = TaintValue(reason);
  bool unschedulable = spec.value("unschedulable", json(false)) == json(true);
  bool have_taint = false;
  json new_taints = json::array();
  for (const json& taint : taints) {
    if (taint.is_object() && taint.value("key", json()) == json(kUnhealthyTaint) &&
        taint.value("effect", json()) == json("NoSchedule")) {
      have_taint = taint.value("value", json()) == json(value);
      continue;  // replaced by the one below (same reason: unchanged)
    }
    new_taints.push_back(taint);
  }
  if (unschedulable && have_taint && !(consume_report && has_report)) {
    return std::optional<json>();
  }
  json taint = {{"key", kUnhealthyTaint}, {"value", value}, {"effect", "NoSchedule"}};
  taint["timeAdded"] = Rfc3339(wall_ns);
  new_taints.push_back(taint);

  json patch = {{"metadata",
                 {{"resourceVersion", metadata["resourceVersion"]},
                  {"annotations",
                   {{kUnhealthySinceAnnotation, Rfc3339(wall_ns)},
                    {kUnhealthyReasonAnnotation, std::string(reason)}}}}},
                {"spec", {{"unschedulable", true}, {"taints", new_taints}}}};
  if (consume_report && has_report) patch["metadata"]["annotations"][kReportAnnotation] = nullptr;
  return std::optional<json>(std::move(patch));
}

}  // namespace titan::k8s
