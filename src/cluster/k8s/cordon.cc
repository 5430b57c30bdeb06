#include "src/cluster/k8s/cordon.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/base/json_depth.h"
#include "src/base/json_text.h"
#include "src/cluster/k8s/node_patch.h"

namespace titan::k8s {

namespace {

using nlohmann::json;

Result<json> ParseObject(const std::string& body, std::string_view what) {
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(body, what));
  json object = json::parse(body, nullptr, false);
  if (!object.is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: the answer is not a JSON object: '{}'", what, body.substr(0, 120)));
  }
  return object;
}

int64_t Remaining(int64_t deadline_ns) {
  return std::max<int64_t>(1'000'000, deadline_ns - MonoNowNs());
}

}  // namespace

Result<CordonResult> CordonNode(const ApiClient& client, const CordonRequest& request) {
  int64_t deadline_ns = MonoNowNs() + request.timeout_ns;
  CordonResult result;
  result.node = request.node;
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    std::string path = "/api/v1/nodes/" + result.node;
    Result<std::string> body = client.Call("GET", path, "", "", Remaining(deadline_ns));
    if (!body.ok() && body.status().code() == StatusCode::kNotFound && attempt == 1 &&
        !request.pod_namespace.empty() && result.node == request.node) {
      // Not a node: perhaps titan run's node id, a pod name.
      std::string pod_path =
          fmt::format("/api/v1/namespaces/{}/pods/{}", request.pod_namespace, request.node);
      Result<std::string> pod_body = client.Call("GET", pod_path, "", "", Remaining(deadline_ns));
      if (pod_body.ok()) {
        TITAN_ASSIGN_OR_RETURN(json pod, ParseObject(*pod_body, "GET " + pod_path));
        json node_name = pod.value("spec", json::object()).value("nodeName", json());
        if (!node_name.is_string() || node_name.get<std::string>().empty()) {
          return FailedPreconditionError(fmt::format(
              "'{}' is no node; pod {}/{} is not scheduled on a node yet: nothing to cordon",
              request.node, request.pod_namespace, request.node));
        }
        result.node = node_name.get<std::string>();
        --attempt;
        continue;
      }
    }
    if (!body.ok()) {
      return body.status().WithContext(fmt::format("cordoning node '{}'", result.node));
    }
    TITAN_ASSIGN_OR_RETURN(json node, ParseObject(*body, "GET " + path));
    Result<std::optional<json>> patch =
        CordonPatch(node, request.reason, WallNowNs(), request.consume_report);
    if (!patch.ok()) {
      return patch.status().WithContext(fmt::format("GET {}{}", client.endpoint().server, path));
    }
    if (!patch->has_value()) return result;  // already cordoned with this reason
    result.patch = JsonText(**patch);
    if (request.dry_run) return result;
    Result<std::string> patched =
        client.Call("PATCH", path, result.patch, kStrategicMergePatch, Remaining(deadline_ns));
    if (patched.ok()) {
      result.changed = true;
      return result;
    }
    // 409: the node changed after we read it (its resourceVersion moved on); read it again.
    if (patched.status().code() != StatusCode::kFailedPrecondition || attempt == kAttempts ||
        MonoNowNs() >= deadline_ns) {
      return patched.status().WithContext(fmt::format("cordoning node '{}'", result.node));
    }
  }
}

}  // namespace titan::k8s
