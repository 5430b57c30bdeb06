// The LLMJob custom resource (deploy/k8s/llmjob-crd.yaml, group titan.io/v1alpha1): an elastic
// training job of `replicas` pods, never fewer than `minReplicas` nor more than `maxReplicas`.
// ParseLlmJob checks what the CRD's schema and CEL rules check, so a file that `titan k8s
// manifests` accepts is one the API server admits, and the controller never acts on an object
// the API server should have refused.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/status.h"

namespace titan::k8s {

inline constexpr std::string_view kGroup = "titan.io";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "titan.io/v1alpha1";
inline constexpr std::string_view kKind = "LLMJob";
inline constexpr std::string_view kPlural = "llmjobs";
inline constexpr int64_t kMaxReplicas = 100000;  // the CRD's maximum
inline constexpr int64_t kDefaultScaleDownDelayNs = 300'000'000'000;

struct LlmJob {
  std::string name;
  std::string namespace_ = "default";
  std::string resource_version;  // from the API server; "" in a file
  int64_t replicas = 0;
  int64_t min_replicas = 0;
  int64_t max_replicas = 0;
  int64_t scale_down_delay_ns = kDefaultScaleDownDelayNs;
  std::string image;
  std::vector<std::string> command;
  int64_t nproc_per_node = 0;  // 0: gpus_per_replica, or 1 without GPUs
  std::string checkpoint_dir;
  std::string etcd_endpoint;
  nlohmann::json env = nlohmann::json::array();         // core/v1 EnvVar list, passed through
  nlohmann::json resources = nlohmann::json::object();  // core/v1 ResourceRequirements
  int64_t gpus_per_replica = 0;                         // resources.limits["nvidia.com/gpu"]
  // status.replicas as last written by the controller; -1 when absent.
  int64_t status_replicas = -1;

  // "namespace/name", the key used in events and messages.
  std::string Key() const { return namespace_ + "/" + name; }
  // Workers per replica for titan run --nproc-per-node.
  int64_t WorkersPerReplica() const {
    return nproc_per_node > 0 ? nproc_per_node : gpus_per_replica > 0 ? gpus_per_replica : 1;
  }
};

// Reads an LLMJob object (a file's document or the API server's JSON). Errors are
// INVALID_ARGUMENT and name `origin` and the field: "job.yaml: spec.minReplicas (600) is greater
// than spec.replicas (512): lower minReplicas or raise replicas".
Result<LlmJob> ParseLlmJob(const nlohmann::json& object, std::string_view origin);

// Reads a YAML (or JSON) file holding exactly one LLMJob.
Result<LlmJob> LoadLlmJobText(std::string_view text, std::string_view origin);

}  // namespace titan::k8s
