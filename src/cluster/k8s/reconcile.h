// The controller's decisions, free of I/O: given what the API server says about nodes and
// LLMJobs now and what the controller remembers, which nodes to cordon and which workloads to
// resize. controller.h does the I/O; this file is unit-tested on its own (reconcile_test.cc).
//
// Rules:
// - A node reported bad (annotation titan.io/report-unhealthy) is cordoned and tainted; the
//   cordon deletes the report. A failed cordon is retried with back-off (1 s doubling to 60 s).
// - A node is usable when Ready, not cordoned, not tainted titan.io/unhealthy and not reported.
//   A node that was usable and is not any more (or is gone) is a failure at that time.
// - Capacity for a job = sum over usable nodes of floor(allocatable nvidia.com/gpu / the job's
//   GPUs per replica), or one replica per usable node for a job without GPUs. Every job sees the
//   whole cluster's capacity (jobs sharing nodes are not accounted against each other).
// - target = max(minReplicas, min(replicas, capacity)). A workload larger than the target
//   shrinks at once (never below minReplicas: when capacity < minReplicas the job holds at
//   minReplicas and its extra pods wait for nodes). A workload smaller than the target grows
//   at once while below minReplicas, otherwise only once scaleDownDelay has passed since the
//   last failure. A failed resize is retried with back-off.
//
// Thread safety: pure; the state is the caller's.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/cluster/k8s/llmjob.h"
#include "src/cluster/k8s/objects.h"

namespace titan::k8s {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::min();

struct JobView {
  LlmJob job;
  // The workload's (Indexed Job's) current parallelism; -1: no workload found.
  int64_t workload_replicas = -1;
};

struct Action {
  enum class Kind { kCordon, kScale };
  Kind kind = Kind::kCordon;
  std::string node;    // kCordon
  std::string reason;  // kCordon: the report's text
  std::string job;     // kScale: "namespace/name"
  int64_t from = 0, to = 0;
  std::string why;
};

// Something worth an event that is not an action: a node's usability changed, a job holds or
// waits. `type` is the event type, `fields` a JSON object.
struct Observation {
  std::string type;
  nlohmann::json fields;
};

struct Plan {
  std::vector<Action> actions;
  std::vector<Observation> observations;
  // Per job key: capacity as computed in this pass.
  std::map<std::string, int64_t> capacity;
};

// What the controller remembers between passes. Owned by the caller; Reconcile updates it, the
// caller reports the outcome of each action with the methods below.
struct ReconcileState {
  std::map<std::string, bool> node_usable;  // nodes seen in the last pass
  int64_t last_failure_ns = kNever;
  std::string last_failure_node;
  std::map<std::string, int64_t> cordon_retry_at_ns;
  std::map<std::string, int> cordon_failures;
  std::map<std::string, int64_t> scale_retry_at_ns;
  std::map<std::string, int> scale_failures;
  std::map<std::string, std::string> job_note;  // last observation per job (said once)

  // A cordon was sent: not again for 5 s (the watch shows the result meanwhile).
  void CordonSucceeded(const std::string& node, int64_t now_ns);
  // A failed action waits 1 s doubling to 60 s per failure, jittered: `jitter` in [0, 1] picks
  // the delay in [d/2, d] (the controller draws it at random; 1: the whole step, for tests).
  void CordonFailed(const std::string& node, int64_t now_ns, double jitter = 1);
  void ScaleSucceeded(const std::string& job);
  void ScaleFailed(const std::string& job, int64_t now_ns, double jitter = 1);
};

// Replicas the usable nodes hold for a job with `gpus_per_replica` GPUs per replica.
int64_t Capacity(const std::vector<NodeView>& nodes, int64_t gpus_per_replica);

Plan Reconcile(const std::vector<NodeView>& nodes, const std::vector<JobView>& jobs, int64_t now_ns,
               ReconcileState* state);

}  // namespace titan::k8s
