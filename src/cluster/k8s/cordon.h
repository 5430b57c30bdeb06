// `titan k8s cordon`: read a node, cordon it and taint it titan.io/unhealthy=<reason>:NoSchedule
// with one strategic merge patch (node_patch.h), retrying when the node changed in between.
//
// Thread safety: safe to call concurrently with distinct or equal nodes (the API server orders
// the patches; a lost race is a 409 that is retried).
#pragma once

#include <cstdint>
#include <string>

#include "src/base/status.h"
#include "src/cluster/k8s/api_client.h"

namespace titan::k8s {

struct CordonRequest {
  // A Node name, or (when no such Node exists and `pod_namespace` is known) a Pod name whose
  // node is cordoned: titan run's node id is its pod's name.
  std::string node;
  std::string reason;
  std::string pod_namespace;
  bool dry_run = false;                 // compute and print the patch; change nothing
  bool consume_report = false;          // also delete the titan.io/report-unhealthy annotation
  int64_t timeout_ns = 10'000'000'000;  // the whole operation, all attempts
};

struct CordonResult {
  std::string node;      // the Node cordoned (differs from request.node for a pod name)
  bool changed = false;  // false: it already was cordoned with this reason
  std::string patch;     // the patch sent (or, with dry_run, that would be sent); "" if none
};

// Errors name the API server, the node and what to do (ApiClient's messages).
Result<CordonResult> CordonNode(const ApiClient& client, const CordonRequest& request);

}  // namespace titan::k8s
