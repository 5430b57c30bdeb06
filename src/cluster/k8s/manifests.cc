#include "src/cluster/k8s/manifests.h"

#include <fmt/format.h>

namespace titan::k8s {

namespace {

using nlohmann::json;

json Meta(const std::string& name, const std::string& ns, const json& labels) {
  json meta = {{"name", name}, {"labels", labels}};
  if (!ns.empty()) meta["namespace"] = ns;
  return meta;
}

json Rule(const std::string& group, const std::string& resource,
          const std::vector<std::string>& verbs) {
  return {{"apiGroups", json::array({group})},
          {"resources", json::array({resource})},
          {"verbs", verbs}};
}

json Binding(const std::string& kind, const std::string& name, const std::string& ns,
             const std::string& role_kind, const std::string& role, const std::string& sa,
             const std::string& sa_ns, const json& labels) {
  return {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", kind},
      {"metadata", Meta(name, ns, labels)},
      {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", role_kind}, {"name", role}}},
      {"subjects",
       json::array({json{{"kind", "ServiceAccount"}, {"name", sa}, {"namespace", sa_ns}}})}};
}

json FieldEnv(const std::string& name, const std::string& path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
}

json EtcdObjects(const LlmJob& job, const ManifestOptions& options, json labels) {
  std::string name = EtcdName(job);
  labels["titan.io/component"] = "etcd";
  json selector = {{"titan.io/llmjob", job.name}, {"titan.io/component", "etcd"}};
  json service = {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", Meta(name, job.namespace_, labels)},
      {"spec",
       {{"selector", selector},
        {"ports", json::array({json{{"name", "client"}, {"port", 2379}, {"targetPort", 2379}}})}}}};
  std::string url = fmt::format("http://{}.{}.svc:2379", name, job.namespace_);
  json container = {
      {"name", "etcd"},
      {"image", options.etcd_image},
      {"command",
       {"etcd", "--name", name, "--data-dir", "/var/lib/etcd", "--listen-client-urls",
        "http://0.0.0.0:2379", "--advertise-client-urls", url, "--listen-peer-urls",
        "http://0.0.0.0:2380"}},
      {"ports", json::array({json{{"name", "client"}, {"containerPort", 2379}}})},
      {"volumeMounts", json::array({json{{"name", "data"}, {"mountPath", "/var/lib/etcd"}}})},
      {"readinessProbe",
       {{"httpGet", {{"path", "/health"}, {"port", 2379}}}, {"periodSeconds", 2}}}};
  json stateful_set = {
      {"apiVersion", "apps/v1"},
      {"kind", "StatefulSet"},
      {"metadata", Meta(name, job.namespace_, labels)},
      {"spec",
       {{"serviceName", name},
        {"replicas", 1},
        {"selector", {{"matchLabels", selector}}},
        {"template",
         {{"metadata", {{"labels", labels}}},
          {"spec",
           {{"containers", json::array({container})},
            // Rendezvous state only (generations, leases): a restarted etcd starts empty and
            // the nodes rendezvous again; checkpoints live in checkpointDir.
            {"volumes", json::array({json{{"name", "data"}, {"emptyDir", json::object()}}})}}}}}}}};
  return json::array({service, stateful_set});
}

}  // namespace

json JobLabels(const LlmJob& job) {
  return {{"app.kubernetes.io/managed-by", "titan"}, {"titan.io/llmjob", job.name}};
}

std::string JobSelector(const LlmJob& job) { return "titan.io/llmjob=" + job.name; }

std::string EtcdName(const LlmJob& job) { return job.name + "-etcd"; }

std::vector<json> JobManifests(const LlmJob& job, const ManifestOptions& options) {
  json labels = JobLabels(job);
  const std::string& ns = job.namespace_;
  std::string sa = job.name + "-titan";
  std::vector<json> out;
  out.push_back(
      {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", Meta(sa, ns, labels)}});
  // `titan k8s cordon` from a pod: read the node (to keep its taints), patch it.
  out.push_back(
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "ClusterRole"},
       {"metadata", Meta("titan-node-cordon", "", {{"app.kubernetes.io/managed-by", "titan"}})},
       {"rules", json::array({Rule("", "nodes", {"get", "patch"})})}});
  out.push_back(Binding("ClusterRoleBinding", fmt::format("titan-node-cordon-{}-{}", ns, job.name),
                        "", "ClusterRole", "titan-node-cordon", sa, ns, labels));
  // ... and, given a pod name (titan run's node id), the node the pod runs on.
  out.push_back({{"apiVersion", "rbac.authorization.k8s.io/v1"},
                 {"kind", "Role"},
                 {"metadata", Meta(sa, ns, labels)},
                 {"rules", json::array({Rule("", "pods", {"get"})})}});
  out.push_back(Binding("RoleBinding", sa, ns, "Role", sa, sa, ns, labels));

  std::string etcd = !options.etcd_endpoint.empty() ? options.etcd_endpoint : job.etcd_endpoint;
  if (etcd.empty()) {
    for (json& object : EtcdObjects(job, options, labels)) out.push_back(std::move(object));
    etcd = fmt::format("http://{}.{}.svc:2379", EtcdName(job), ns);
  }
  json selector = {{"titan.io/llmjob", job.name}};
  out.push_back({{"apiVersion", "v1"},
                 {"kind", "Service"},
                 {"metadata", Meta(job.name, ns, labels)},
                 {"spec",
                  {{"clusterIP", "None"},
                   {"selector", selector},
                   {"publishNotReadyAddresses", true},
                   {"ports", json::array({json{{"name", "rdzv"}, {"port", 29500}}})}}}});

  std::vector<std::string> command = {
      options.titan_path, "run",
      "--nnodes",         fmt::format("{}:{}", job.min_replicas, job.max_replicas),
      "--etcd",           etcd,
      "--job-id",         fmt::format("{}-{}", ns, job.name),
      "--node-id",        "$(POD_NAME)",
      "--node-addr",      "$(POD_IP)",
      "--nproc-per-node", std::to_string(job.WorkersPerReplica()),
      "--on-isolate",     "k8s-cordon"};
  if (!job.checkpoint_dir.empty()) {
    command.push_back("--checkpoint-dir");
    command.push_back(job.checkpoint_dir);
  }
  command.push_back("--");
  command.insert(command.end(), job.command.begin(), job.command.end());
  json env = json::array(
      {FieldEnv("POD_NAME", "metadata.name"), FieldEnv("POD_NAMESPACE", "metadata.namespace"),
       FieldEnv("POD_IP", "status.podIP"), FieldEnv("NODE_NAME", "spec.nodeName")});
  for (const json& var : job.env) env.push_back(var);
  json container = {{"name", "titan"}, {"image", job.image}, {"command", command}, {"env", env}};
  if (!job.resources.empty()) container["resources"] = job.resources;
  json pod_labels = labels;
  out.push_back({{"apiVersion", "batch/v1"},
                 {"kind", "Job"},
                 {"metadata", Meta(job.name, ns, labels)},
                 {"spec",
                  {{"completionMode", "Indexed"},
                   // The controller keeps parallelism == completions (an elastic Indexed Job).
                   {"completions", job.replicas},
                   {"parallelism", job.replicas},
                   // titan run restarts workers itself; a pod that fails anyway (its node lost,
                   // titan run gave up) is replaced, at most maxReplicas times in all.
                   {"backoffLimit", job.max_replicas},
                   {"template",
                    {{"metadata", {{"labels", pod_labels}}},
                     {"spec",
                      {{"subdomain", job.name},
                       {"serviceAccountName", sa},
                       {"restartPolicy", "Never"},
                       {"containers", json::array({container})}}}}}}}});
  return out;
}

std::vector<json> ControllerManifests(const ControllerManifestOptions& options) {
  json labels = {{"app.kubernetes.io/managed-by", "titan"},
                 {"app.kubernetes.io/name", "titan-k8s-controller"}};
  const std::string& ns = options.namespace_;
  std::string name = "titan-k8s-controller";
  std::vector<json> out;
  out.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", Meta(ns, "", labels)}});
  out.push_back(
      {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", Meta(name, ns, labels)}});
  out.push_back({{"apiVersion", "rbac.authorization.k8s.io/v1"},
                 {"kind", "ClusterRole"},
                 {"metadata", Meta(name, "", labels)},
                 {"rules",
                  {Rule("", "nodes", {"get", "list", "watch", "patch"}),
                   Rule(std::string(kGroup), "llmjobs", {"list", "watch"}),
                   Rule(std::string(kGroup), "llmjobs/status", {"patch"}),
                   Rule("batch", "jobs", {"get", "patch"})}}});
  out.push_back(Binding("ClusterRoleBinding", name, "", "ClusterRole", name, name, ns, labels));
  json container = {{"name", "controller"},
                    {"image", options.image},
                    {"command", {options.titan_path, "k8s", "controller"}}};
  out.push_back(
      {{"apiVersion", "apps/v1"},
       {"kind", "Deployment"},
       {"metadata", Meta(name, ns, labels)},
       {"spec",
        {{"replicas", 1},
         {"strategy", {{"type", "Recreate"}}},
         {"selector", {{"matchLabels", {{"app.kubernetes.io/name", name}}}}},
         {"template",
          {{"metadata", {{"labels", labels}}},
           {"spec", {{"serviceAccountName", name}, {"containers", json::array({container})}}}}}}}});
  return out;
}

}  // namespace titan::k8s
