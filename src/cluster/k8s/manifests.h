// The Kubernetes objects that run an LLMJob, and the ones that run the controller.
//
// The workload is an Indexed Job (docs/run.md, "Kubernetes", says why): completions =
// parallelism = the current size, pods `<job>-<index>` under a headless Service, each running
// `titan run --nnodes MIN:MAX --etcd ... --node-id $(POD_NAME) --on-isolate k8s-cordon -- CMD`.
// RBAC grants exactly the verbs titan uses: the pods' service account may get and patch Nodes
// (the cordon) and get Pods in the job's namespace (to find a pod's node); the controller's may
// get/list/watch/patch Nodes, list/watch LLMJobs, patch LLMJob status, get/patch Jobs.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/cluster/k8s/llmjob.h"

namespace titan::k8s {

struct ManifestOptions {
  // Overrides spec.etcdEndpoint; both empty: the manifests include a one-member etcd.
  std::string etcd_endpoint;
  std::string etcd_image = "registry.k8s.io/etcd:3.5.15-0";
  // The titan binary inside the job's image.
  std::string titan_path = "titan";
};

// Labels every object of a job carries; the pods' selector.
nlohmann::json JobLabels(const LlmJob& job);
// "titan.io/llmjob=<name>": status.selector for the LLMJob's scale subresource.
std::string JobSelector(const LlmJob& job);
// Name of the etcd Service/StatefulSet the manifests include.
std::string EtcdName(const LlmJob& job);

// ServiceAccount, ClusterRole + binding, Role + binding, [etcd Service + StatefulSet], headless
// Service, Indexed Job; in the order `kubectl apply` needs them.
std::vector<nlohmann::json> JobManifests(const LlmJob& job, const ManifestOptions& options);

struct ControllerManifestOptions {
  std::string namespace_ = "titan-system";
  std::string image = "titan:latest";
  std::string titan_path = "titan";
};

// Namespace, ServiceAccount, ClusterRole + binding and a one-replica Deployment running
// `titan k8s controller` with the in-cluster service account.
std::vector<nlohmann::json> ControllerManifests(const ControllerManifestOptions& options);

}  // namespace titan::k8s
