#include "src/cluster/k8s/cordon.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/backoff.h"
#include "src/base/clock.h"
#include "src/base/json_depth.h"
#include "src/base/json_text.h"
#include "src/base/text.h"
#include "src/cluster/k8s/names.h"
#include "src/cluster/k8s/node_patch.h"

namespace titan::k8s {

namespace {

using nlohmann::json;

Result<json> ParseObject(const std::string& body, std::string_view what) {
  TITAN_RETURN_IF_ERROR(CheckJsonDepth(body, what));
  json object = json::parse(body, nullptr, false);
  if (!object.is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: the answer is not a JSON object: '{}'", what, RemoteText(body, 120)));
  }
  return object;
}

int64_t Remaining(int64_t deadline_ns) {
  return std::max<int64_t>(1'000'000, deadline_ns - MonoNowNs());
}

// The answer must be about what was asked: the object named `name` (in `namespace_`, when
// given). A proxy or server that answers for another object would have titan cordon it.
Status CheckIdentity(const json& object, std::string_view kind, std::string_view name,
                     std::string_view namespace_, std::string_view what) {
  json meta = object.value("metadata", json::object());
  json got_name = meta.is_object() ? meta.value("name", json()) : json();
  json got_ns = meta.is_object() ? meta.value("namespace", json()) : json();
  bool same =
      got_name.is_string() && got_name.get<std::string>() == name &&
      (namespace_.empty() || (got_ns.is_string() && got_ns.get<std::string>() == namespace_));
  if (same) return OkStatus();
  return InvalidArgumentError(fmt::format(
      "{}: asked for {} '{}' but the answer is about {} '{}'{}; not acting on it (a misbehaving "
      "proxy or API server?)",
      what, kind, name, kind,
      RemoteText(got_name.is_string() ? got_name.get<std::string>() : "?", 80),
      got_ns.is_string() ? " in namespace '" + RemoteText(got_ns.get<std::string>(), 80) + "'"
                         : ""));
}

}  // namespace

Result<CordonResult> CordonNode(const ApiClient& client, const CordonRequest& request) {
  int64_t deadline_ns = MonoNowNs() + request.timeout_ns;
  CordonResult result;
  result.node = request.node;
  TITAN_RETURN_IF_ERROR(CheckSubdomainName(request.node, "node"));
  if (!request.pod_namespace.empty()) {
    TITAN_RETURN_IF_ERROR(CheckLabelName(request.pod_namespace, "namespace"));
  }
  constexpr int kAttempts = 5;
  Backoff backoff(50'000'000, 1'000'000'000);  // between re-reads after a 409
  for (int attempt = 1;; ++attempt) {
    TITAN_ASSIGN_OR_RETURN(std::string path, NodePath(result.node));
    Result<std::string> body = client.Call("GET", path, "", "", Remaining(deadline_ns));
    if (!body.ok() && body.status().code() == StatusCode::kNotFound && attempt == 1 &&
        !request.pod_namespace.empty() && result.node == request.node) {
      // Not a node: perhaps titan run's node id, a pod name.
      TITAN_ASSIGN_OR_RETURN(std::string pod_path, PodPath(request.pod_namespace, request.node));
      Result<std::string> pod_body = client.Call("GET", pod_path, "", "", Remaining(deadline_ns));
      if (pod_body.ok()) {
        std::string what = "GET " + pod_path;
        TITAN_ASSIGN_OR_RETURN(json pod, ParseObject(*pod_body, what));
        TITAN_RETURN_IF_ERROR(CheckIdentity(pod, "pod", request.node, request.pod_namespace, what));
        json node_name = pod.value("spec", json::object()).value("nodeName", json());
        if (!node_name.is_string() || node_name.get<std::string>().empty()) {
          return FailedPreconditionError(fmt::format(
              "'{}' is no node; pod {}/{} is not scheduled on a node yet: nothing to cordon",
              request.node, request.pod_namespace, request.node));
        }
        result.node = node_name.get<std::string>();
        TITAN_RETURN_IF_ERROR(CheckSubdomainName(
            result.node,
            fmt::format("the node of pod {}/{}", request.pod_namespace, request.node)));
        --attempt;
        continue;
      }
    }
    if (!body.ok()) {
      return body.status().WithContext(fmt::format("cordoning node '{}'", result.node));
    }
    TITAN_ASSIGN_OR_RETURN(json node, ParseObject(*body, "GET " + path));
    TITAN_RETURN_IF_ERROR(CheckIdentity(node, "node", result.node, "", "GET " + path));
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
    int64_t wait_ns = backoff.Next();
    if (patched.status().code() != StatusCode::kFailedPrecondition || attempt == kAttempts ||
        MonoNowNs() + wait_ns >= deadline_ns) {
      return patched.status().WithContext(fmt::format("cordoning node '{}'", result.node));
    }
    SleepUnlessStopped(wait_ns, nullptr);
  }
}

}  // namespace titan::k8s
