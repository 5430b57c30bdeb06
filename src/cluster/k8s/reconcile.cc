#include "src/cluster/k8s/reconcile.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "src/base/duration.h"
#include "src/base/json_text.h"

namespace titan::k8s {

namespace {

using nlohmann::json;

constexpr int64_t kSecondNs = 1'000'000'000;

int64_t FailureDelay(int failures, double jitter) {
  int64_t step = std::min<int64_t>(60 * kSecondNs, kSecondNs << std::min(failures - 1, 6));
  return step / 2 +
         static_cast<int64_t>(static_cast<double>(step / 2) * std::clamp(jitter, 0.0, 1.0));
}

std::string WhyUnusable(const NodeView& node) {
  if (!node.report.empty()) return "reported: " + node.report;
  if (node.titan_tainted) return "tainted " + std::string("titan.io/unhealthy");
  if (node.unschedulable) return "cordoned";
  return "not ready";
}

// Says `note` for `job` unless it was the last thing said for it.
void Note(ReconcileState* state, Plan* plan, const std::string& job, const std::string& type,
          json fields) {
  std::string key = type + JsonText(fields);
  if (state->job_note[job] == key) return;
  state->job_note[job] = key;
  fields["job"] = job;
  plan->observations.push_back({type, std::move(fields)});
}

}  // namespace

void ReconcileState::CordonSucceeded(const std::string& node, int64_t now_ns) {
  cordon_failures.erase(node);
  cordon_retry_at_ns[node] = now_ns + 5 * kSecondNs;
}

void ReconcileState::CordonFailed(const std::string& node, int64_t now_ns, double jitter) {
  cordon_retry_at_ns[node] = now_ns + FailureDelay(++cordon_failures[node], jitter);
}

void ReconcileState::ScaleSucceeded(const std::string& job) {
  scale_failures.erase(job);
  scale_retry_at_ns.erase(job);
}

void ReconcileState::ScaleFailed(const std::string& job, int64_t now_ns, double jitter) {
  scale_retry_at_ns[job] = now_ns + FailureDelay(++scale_failures[job], jitter);
}

int64_t Capacity(const std::vector<NodeView>& nodes, int64_t gpus_per_replica) {
  int64_t capacity = 0;
  for (const NodeView& node : nodes) {
    if (!node.Usable()) continue;
    capacity += gpus_per_replica > 0 ? node.gpus / gpus_per_replica : 1;
  }
  return capacity;
}

Plan Reconcile(const std::vector<NodeView>& nodes, const std::vector<JobView>& jobs, int64_t now_ns,
               ReconcileState* state) {
  Plan plan;
  // Nodes: changes of usability, cordon requests.
  std::set<std::string> seen;
  for (const NodeView& node : nodes) {
    seen.insert(node.name);
    bool usable = node.Usable();
    auto before = state->node_usable.find(node.name);
    if (before != state->node_usable.end() && before->second != usable) {
      if (usable) {
        plan.observations.push_back({"node_usable", {{"node", node.name}}});
      } else {
        state->last_failure_ns = now_ns;
        state->last_failure_node = node.name;
        plan.observations.push_back(
            {"node_unusable", {{"node", node.name}, {"why", WhyUnusable(node)}}});
      }
    }
    state->node_usable[node.name] = usable;
    if (!node.report.empty()) {
      auto retry = state->cordon_retry_at_ns.find(node.name);
      if (retry == state->cordon_retry_at_ns.end() || now_ns >= retry->second) {
        Action cordon;
        cordon.kind = Action::Kind::kCordon;
        cordon.node = node.name;
        cordon.reason = node.report;
        cordon.why = "reported unhealthy (annotation titan.io/report-unhealthy)";
        plan.actions.push_back(std::move(cordon));
      }
    } else {
      state->cordon_retry_at_ns.erase(node.name);
      state->cordon_failures.erase(node.name);
    }
  }
  for (auto it = state->node_usable.begin(); it != state->node_usable.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    if (it->second) {
      state->last_failure_ns = now_ns;
      state->last_failure_node = it->first;
    }
    plan.observations.push_back({"node_gone", {{"node", it->first}}});
    it = state->node_usable.erase(it);
  }

  // Jobs: resize within min..max.
  for (const JobView& view : jobs) {
    const LlmJob& job = view.job;
    std::string key = job.Key();
    int64_t capacity = Capacity(nodes, job.gpus_per_replica);
    plan.capacity[key] = capacity;
    int64_t target = std::max(job.min_replicas, std::min(job.replicas, capacity));
    int64_t current = view.workload_replicas;
    if (current < 0) {
      Note(state, &plan, key, "no_workload",
           {{"message", fmt::format("no Job {} found: apply `titan k8s manifests` for it", key)}});
      continue;
    }
    if (auto retry = state->scale_retry_at_ns.find(key);
        retry != state->scale_retry_at_ns.end() && now_ns < retry->second) {
      continue;
    }
    Action scale;
    scale.kind = Action::Kind::kScale;
    scale.job = key;
    scale.from = current;
    scale.to = target;
    if (current > target) {
      if (capacity < job.min_replicas) {
        scale.why = fmt::format("capacity {} is below minReplicas {}: holding at minReplicas",
                                capacity, job.min_replicas);
      } else if (capacity < job.replicas) {
        scale.why =
            fmt::format("capacity {} (usable nodes) is below replicas {}", capacity, job.replicas);
      } else {
        scale.why = fmt::format("replicas is {}", job.replicas);
      }
      plan.actions.push_back(std::move(scale));
      state->job_note.erase(key);
    } else if (current < target) {
      int64_t since = state->last_failure_ns == kNever ? -1 : now_ns - state->last_failure_ns;
      if (current < job.min_replicas) {
        scale.why = fmt::format("below minReplicas {}", job.min_replicas);
      } else if (since >= 0 && since < job.scale_down_delay_ns) {
        Note(state, &plan, key, "grow_wait",
             {{"from", current},
              {"to", target},
              {"last_failure_node", state->last_failure_node},
              {"scale_down_delay", FormatDuration(job.scale_down_delay_ns)},
              {"message", fmt::format("capacity for {} replicas; growing from {} once "
                                      "scaleDownDelay {} has passed since the last failure ({})",
                                      target, current, FormatDuration(job.scale_down_delay_ns),
                                      state->last_failure_node)}});
        continue;
      } else {
        scale.why = since >= 0 ? fmt::format(
                                     "capacity {} and scaleDownDelay {} passed since the "
                                     "last failure",
                                     capacity, FormatDuration(job.scale_down_delay_ns))
                               : fmt::format("capacity {}, replicas {}", capacity, job.replicas);
      }
      plan.actions.push_back(std::move(scale));
      state->job_note.erase(key);
    } else if (capacity < job.min_replicas) {
      Note(state, &plan, key, "hold",
           {{"replicas", current},
            {"capacity", capacity},
            {"message", fmt::format("capacity {} is below minReplicas {}: holding at {}; pods "
                                    "wait for nodes",
                                    capacity, job.min_replicas, current)}});
    }
  }
  return plan;
}

}  // namespace titan::k8s
