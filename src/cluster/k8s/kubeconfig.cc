#include "src/cluster/k8s/kubeconfig.h"

#include <cstdlib>

#include <fmt/format.h>

#include "src/base/env.h"
#include "src/base/text.h"
#include "src/base/yaml_json.h"
#include "src/supervisor/etcd_json.h"  // Base64Decode

namespace titan::k8s {

namespace {

using nlohmann::json;

// The entry of `list` (clusters, users, contexts) named `name`, or null.
const json* Named(const json& config, const char* list, std::string_view name) {
  auto it = config.find(list);
  if (it == config.end() || !it->is_array()) return nullptr;
  for (const json& entry : *it) {
    if (entry.is_object() && entry.value("name", json()).is_string() &&
        entry["name"].get<std::string>() == name) {
      return &entry;
    }
  }
  return nullptr;
}

std::string Str(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string Resolve(const std::string& base_dir, const std::string& file) {
  if (file.empty() || file[0] == '/' || base_dir.empty()) return file;
  return base_dir + "/" + file;
}

Result<std::string> Data(const json& object, const char* key, const std::string& where) {
  std::string text = Str(object, key);
  if (text.empty()) return std::string();
  Result<std::string> decoded = supervisor::Base64Decode(text);
  if (!decoded.ok()) {
    return InvalidArgumentError(
        fmt::format("{}: {} is not valid base64 ({}); re-export it with `base64 -w0`", where, key,
                    decoded.status().message()));
  }
  return *decoded;
}

}  // namespace

Result<ApiEndpoint> ParseKubeconfig(std::string_view text, const std::string& path,
                                    std::string_view context, const ReadFileFn& read_file) {
  TITAN_ASSIGN_OR_RETURN(std::vector<json> docs, YamlToJson(text, path));
  if (docs.size() != 1 || !docs[0].is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: not a kubeconfig (expected one YAML mapping with "
                    "clusters, users, contexts)",
                    path));
  }
  const json& config = docs[0];
  std::string context_name =
      context.empty() ? Str(config, "current-context") : std::string(context);
  if (context_name.empty()) {
    return InvalidArgumentError(fmt::format(
        "{}: no current-context; pass --context or run `kubectl config use-context NAME`", path));
  }
  const json* ctx_entry = Named(config, "contexts", context_name);
  if (ctx_entry == nullptr || !ctx_entry->contains("context") ||
      !(*ctx_entry)["context"].is_object()) {
    return NotFoundError(
        fmt::format("{}: context '{}' is not among its contexts", path, context_name));
  }
  const json& ctx = (*ctx_entry)["context"];
  std::string cluster_name = Str(ctx, "cluster");
  std::string user_name = Str(ctx, "user");
  const json* cluster_entry = Named(config, "clusters", cluster_name);
  if (cluster_entry == nullptr || !cluster_entry->contains("cluster") ||
      !(*cluster_entry)["cluster"].is_object()) {
    return NotFoundError(
        fmt::format("{}: context '{}' names cluster '{}', which is not among its "
                    "clusters",
                    path, context_name, cluster_name));
  }
  const json& cluster = (*cluster_entry)["cluster"];
  std::string base_dir;
  if (size_t slash = path.rfind('/'); slash != std::string::npos) base_dir = path.substr(0, slash);
  if (base_dir.empty() && !path.empty() && path[0] == '/') base_dir = "/";

  ApiEndpoint endpoint;
  endpoint.source = fmt::format("kubeconfig {} (context {})", path, context_name);
  endpoint.server = Str(cluster, "server");
  while (!endpoint.server.empty() && endpoint.server.back() == '/') endpoint.server.pop_back();
  if (endpoint.server.rfind("https://", 0) != 0 && endpoint.server.rfind("http://", 0) != 0) {
    return InvalidArgumentError(
        fmt::format("{}: cluster '{}' has server '{}'; expected https://HOST:PORT", path,
                    cluster_name, endpoint.server));
  }
  std::string where = fmt::format("{}: cluster '{}'", path, cluster_name);
  endpoint.ca_file = Resolve(base_dir, Str(cluster, "certificate-authority"));
  TITAN_ASSIGN_OR_RETURN(endpoint.ca_pem, Data(cluster, "certificate-authority-data", where));
  if (auto it = cluster.find("insecure-skip-tls-verify"); it != cluster.end()) {
    endpoint.insecure_skip_tls_verify = it->is_boolean() && it->get<bool>();
  }
  endpoint.namespace_ = Str(ctx, "namespace");

  if (!user_name.empty()) {
    const json* user_entry = Named(config, "users", user_name);
    if (user_entry == nullptr) {
      return NotFoundError(
          fmt::format("{}: context '{}' names user '{}', which is not among its users", path,
                      context_name, user_name));
    }
    const json& user = user_entry->contains("user") && (*user_entry)["user"].is_object()
                           ? (*user_entry)["user"]
                           : json::object();
    where = fmt::format("{}: user '{}'", path, user_name);
    if (user.contains("exec") || user.contains("auth-provider")) {
      return UnimplementedError(fmt::format(
          "{} uses an exec or auth-provider plugin, which titan does not run; use a token "
          "(e.g. `kubectl create token SA`) or a client certificate",
          where));
    }
    if (user.contains("username") || user.contains("password")) {
      return UnimplementedError(
          fmt::format("{} uses basic auth, which Kubernetes removed in 1.19; use a token", where));
    }
    endpoint.token = Str(user, "token");
    if (std::string token_file = Str(user, "tokenFile");
        endpoint.token.empty() && !token_file.empty()) {
      TITAN_ASSIGN_OR_RETURN(std::string token, read_file(Resolve(base_dir, token_file)));
      endpoint.token = std::string(Trim(token));
    }
    endpoint.client_cert_file = Resolve(base_dir, Str(user, "client-certificate"));
    endpoint.client_key_file = Resolve(base_dir, Str(user, "client-key"));
    TITAN_ASSIGN_OR_RETURN(endpoint.client_cert_pem, Data(user, "client-certificate-data", where));
    TITAN_ASSIGN_OR_RETURN(endpoint.client_key_pem, Data(user, "client-key-data", where));
    bool has_cert = !endpoint.client_cert_file.empty() || !endpoint.client_cert_pem.empty();
    bool has_key = !endpoint.client_key_file.empty() || !endpoint.client_key_pem.empty();
    if (has_cert != has_key) {
      return InvalidArgumentError(fmt::format(
          "{} has a client certificate without its key (or a key without its certificate)", where));
    }
  }
  return endpoint;
}

Result<ApiEndpoint> InClusterEndpoint(const GetEnvFn& env, const ReadFileFn& read_file,
                                      std::string_view dir) {
  std::optional<std::string> host = env("KUBERNETES_SERVICE_HOST");
  std::optional<std::string> port = env("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return FailedPreconditionError(
        "not inside a Kubernetes pod (KUBERNETES_SERVICE_HOST/PORT are unset); pass "
        "--kubeconfig PATH or set KUBECONFIG");
  }
  ApiEndpoint endpoint;
  bool ipv6 = host->find(':') != std::string::npos;
  endpoint.server =
      fmt::format("https://{}{}{}:{}", ipv6 ? "[" : "", *host, ipv6 ? "]" : "", *port);
  endpoint.source = fmt::format("in-cluster service account ({})", dir);
  std::string base(dir);
  Result<std::string> token = read_file(base + "/token");
  if (!token.ok()) {
    return token.status().WithContext(
        "in-cluster service account token (is automountServiceAccountToken off?)");
  }
  endpoint.token = std::string(Trim(*token));
  endpoint.ca_file = base + "/ca.crt";
  if (Result<std::string> ns = read_file(base + "/namespace"); ns.ok()) {
    endpoint.namespace_ = std::string(Trim(*ns));
  }
  return endpoint;
}

Result<ApiEndpoint> ResolveEndpoint(const std::string& kubeconfig, std::string_view context) {
  ReadFileFn read = [](const std::string& path) { return Env::ReadFile(path, 1 << 20); };
  auto from_file = [&](const std::string& path) -> Result<ApiEndpoint> {
    TITAN_ASSIGN_OR_RETURN(std::string text, read(path));
    return ParseKubeconfig(text, path, context, read);
  };
  if (!kubeconfig.empty()) return from_file(kubeconfig);
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string first(env);
    return from_file(first.substr(0, first.find(':')));
  }
  GetEnvFn getenv_fn = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  if (getenv_fn("KUBERNETES_SERVICE_HOST")) return InClusterEndpoint(getenv_fn, read);
  const char* home = std::getenv("HOME");
  std::string path = std::string(home ? home : "") + "/.kube/config";
  Result<ApiEndpoint> endpoint = from_file(path);
  if (!endpoint.ok() && endpoint.status().code() == StatusCode::kNotFound &&
      endpoint.status().message().find(path) != std::string_view::npos) {
    return FailedPreconditionError(fmt::format(
        "no Kubernetes API server configured: pass --kubeconfig PATH, set KUBECONFIG, run "
        "inside a pod, or create {}",
        path));
  }
  return endpoint;
}

}  // namespace titan::k8s
