#include "src/cluster/k8s/llmjob.h"

#include <cctype>

#include <fmt/format.h>

#include "src/base/duration.h"
#include "src/base/json_text.h"
#include "src/base/text.h"
#include "src/base/yaml_json.h"
#include "src/cluster/k8s/names.h"

namespace titan::k8s {

namespace {

using nlohmann::json;

Status FieldError(std::string_view origin, std::string_view field, std::string_view what) {
  return InvalidArgumentError(fmt::format("{}: {} {}", origin, field, what));
}

Result<std::string> StringField(const json& spec, const char* key, std::string_view origin,
                                bool required) {
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) {
    if (required) return FieldError(origin, fmt::format("spec.{}", key), "is missing");
    return std::string();
  }
  if (!it->is_string()) {
    return FieldError(origin, fmt::format("spec.{}", key), "must be a string");
  }
  return it->get<std::string>();
}

Result<int64_t> ReplicaField(const json& spec, const char* key, std::string_view origin) {
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) {
    return FieldError(origin, fmt::format("spec.{}", key), "is missing (an integer >= 1)");
  }
  if (!it->is_number_integer()) {
    return FieldError(origin, fmt::format("spec.{}", key),
                      fmt::format("must be an integer, not {}", JsonText(*it)));
  }
  int64_t v = it->get<int64_t>();
  if (v < 1 || v > kMaxReplicas) {
    return FieldError(origin, fmt::format("spec.{}", key),
                      fmt::format("({}) must lie in 1..{}", v, kMaxReplicas));
  }
  return v;
}

// A resource quantity given as an integer or a string of digits ("1", 8).
bool WholeQuantity(const json& v, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return *out >= 0;
  }
  return v.is_string() && ParseInt64(v.get<std::string>(), out) && *out >= 0;
}

}  // namespace

Result<LlmJob> ParseLlmJob(const json& object, std::string_view origin) {
  if (!object.is_object()) return InvalidArgumentError(fmt::format("{}: not an object", origin));
  LlmJob job;
  std::string api_version = object.value("apiVersion", json("")).is_string()
                                ? object.value("apiVersion", std::string())
                                : std::string();
  std::string kind = object.value("kind", json("")).is_string()
                         ? object.value("kind", std::string())
                         : std::string();
  if (api_version != kApiVersion || kind != kKind) {
    return InvalidArgumentError(
        fmt::format("{}: apiVersion '{}', kind '{}': expected apiVersion {} and kind {}", origin,
                    api_version, kind, kApiVersion, kKind));
  }
  const json& metadata = object.contains("metadata") ? object["metadata"] : json();
  if (!metadata.is_object() || !metadata.contains("name") || !metadata["name"].is_string() ||
      metadata["name"].get<std::string>().empty()) {
    return FieldError(origin, "metadata.name", "is missing");
  }
  job.name = metadata["name"].get<std::string>();
  // A DNS-1035 label: the name becomes a Service's and a Job's.
  bool label_ok = job.name.size() <= 52 && std::isalpha(static_cast<unsigned char>(job.name[0]));
  for (char c : job.name)
    label_ok = label_ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (!label_ok || job.name.back() == '-') {
    return FieldError(origin, "metadata.name",
                      fmt::format("'{}' must be lower-case letters, digits and '-', start with a "
                                  "letter, at most 52 characters (it names the Job and Service)",
                                  job.name));
  }
  if (metadata.contains("namespace") && metadata["namespace"].is_string()) {
    job.namespace_ = metadata["namespace"].get<std::string>();
    // It goes into API paths (the Job, the status subresource).
    if (Status label = CheckLabelName(job.namespace_, "namespace"); !label.ok()) {
      return FieldError(origin, "metadata.namespace", label.message());
    }
  }
  if (metadata.contains("resourceVersion") && metadata["resourceVersion"].is_string()) {
    job.resource_version = metadata["resourceVersion"].get<std::string>();
  }
  if (!object.contains("spec") || !object["spec"].is_object()) {
    return FieldError(origin, "spec", "is missing");
  }
  const json& spec = object["spec"];
  TITAN_ASSIGN_OR_RETURN(job.replicas, ReplicaField(spec, "replicas", origin));
  TITAN_ASSIGN_OR_RETURN(job.min_replicas, ReplicaField(spec, "minReplicas", origin));
  TITAN_ASSIGN_OR_RETURN(job.max_replicas, ReplicaField(spec, "maxReplicas", origin));
  if (job.min_replicas > job.replicas) {
    return FieldError(origin, "spec.minReplicas",
                      fmt::format("({}) is greater than spec.replicas ({}): lower minReplicas or "
                                  "raise replicas",
                                  job.min_replicas, job.replicas));
  }
  if (job.replicas > job.max_replicas) {
    return FieldError(origin, "spec.maxReplicas",
                      fmt::format("({}) is less than spec.replicas ({}): raise maxReplicas or "
                                  "lower replicas",
                                  job.max_replicas, job.replicas));
  }
  TITAN_ASSIGN_OR_RETURN(std::string delay, StringField(spec, "scaleDownDelay", origin, false));
  if (!delay.empty() && (!std::isalpha(static_cast<unsigned char>(delay.back())) ||
                         !ParseDurationOrZeroNs(delay, &job.scale_down_delay_ns))) {
    return FieldError(origin, "spec.scaleDownDelay",
                      fmt::format("'{}' is not a duration: a number and a unit (ns, us, ms, s, m, "
                                  "h), such as 300s",
                                  delay));
  }
  TITAN_ASSIGN_OR_RETURN(job.image, StringField(spec, "image", origin, true));
  if (job.image.empty()) return FieldError(origin, "spec.image", "is empty");
  auto command = spec.find("command");
  if (command == spec.end() || !command->is_array() || command->empty()) {
    return FieldError(origin, "spec.command",
                      "must be a non-empty list of strings (the training command)");
  }
  for (const json& arg : *command) {
    if (!arg.is_string()) return FieldError(origin, "spec.command", "must hold only strings");
    job.command.push_back(arg.get<std::string>());
  }
  if (auto it = spec.find("nprocPerNode"); it != spec.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 1024) {
      return FieldError(origin, "spec.nprocPerNode", "must be an integer in 1..1024");
    }
    job.nproc_per_node = it->get<int64_t>();
  }
  TITAN_ASSIGN_OR_RETURN(job.checkpoint_dir, StringField(spec, "checkpointDir", origin, false));
  if (!job.checkpoint_dir.empty() && job.checkpoint_dir[0] != '/' &&
      job.checkpoint_dir.rfind("s3://", 0) != 0) {
    return FieldError(
        origin, "spec.checkpointDir",
        fmt::format("'{}' must be an absolute path or an s3:// URL", job.checkpoint_dir));
  }
  TITAN_ASSIGN_OR_RETURN(job.etcd_endpoint, StringField(spec, "etcdEndpoint", origin, false));
  if (!job.etcd_endpoint.empty() && job.etcd_endpoint.rfind("http://", 0) != 0 &&
      job.etcd_endpoint.rfind("https://", 0) != 0) {
    return FieldError(origin, "spec.etcdEndpoint",
                      fmt::format("'{}' must start with http:// or https://", job.etcd_endpoint));
  }
  if (auto it = spec.find("env"); it != spec.end() && !it->is_null()) {
    if (!it->is_array()) return FieldError(origin, "spec.env", "must be a list of EnvVar");
    for (const json& var : *it) {
      if (!var.is_object() || !var.contains("name") || !var["name"].is_string()) {
        return FieldError(origin, "spec.env", "items must be objects with a string 'name'");
      }
    }
    job.env = *it;
  }
  if (auto it = spec.find("resources"); it != spec.end() && !it->is_null()) {
    if (!it->is_object()) return FieldError(origin, "spec.resources", "must be an object");
    job.resources = *it;
    for (const char* part : {"limits", "requests"}) {
      if (it->contains(part) && !(*it)[part].is_object()) {
        return FieldError(origin, fmt::format("spec.resources.{}", part), "must be an object");
      }
    }
    if (it->contains("limits") && (*it)["limits"].contains("nvidia.com/gpu")) {
      if (!WholeQuantity((*it)["limits"]["nvidia.com/gpu"], &job.gpus_per_replica)) {
        return FieldError(origin, "spec.resources.limits[nvidia.com/gpu]",
                          "must be a whole number of GPUs");
      }
    }
  }
  if (object.contains("status") && object["status"].is_object()) {
    const json& status = object["status"];
    if (status.contains("replicas") && status["replicas"].is_number_integer()) {
      job.status_replicas = status["replicas"].get<int64_t>();
    }
  }
  return job;
}

Result<LlmJob> LoadLlmJobText(std::string_view text, std::string_view origin) {
  TITAN_ASSIGN_OR_RETURN(std::vector<json> docs, YamlToJson(text, origin));
  if (docs.size() != 1) {
    return InvalidArgumentError(
        fmt::format("{}: holds {} documents; expected exactly one LLMJob", origin, docs.size()));
  }
  return ParseLlmJob(docs[0], origin);
}

}  // namespace titan::k8s
