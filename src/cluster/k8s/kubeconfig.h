// Where the Kubernetes API server is and how to authenticate to it: a kubeconfig file (the
// subset kubectl's users need: clusters[].cluster.server, certificate-authority(-data),
// insecure-skip-tls-verify; users[].user.token, tokenFile, client-certificate(-data),
// client-key(-data); contexts[].context.cluster/user/namespace; current-context), or the
// in-cluster service account (KUBERNETES_SERVICE_HOST/PORT, token, ca.crt, namespace).
// Exec and auth-provider plugins are not supported and say so.
//
// Thread safety: plain values and pure functions (file access goes through `ReadFileFn`).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "src/base/status.h"

namespace titan::k8s {

struct ApiEndpoint {
  std::string server;  // "https://10.0.0.1:6443" (no trailing '/')
  std::string ca_file;
  std::string ca_pem;  // certificate-authority-data, decoded
  bool insecure_skip_tls_verify = false;
  std::string token;  // bearer token (token or tokenFile)
  std::string client_cert_file, client_key_file;
  std::string client_cert_pem, client_key_pem;  // *-data, decoded
  std::string namespace_;                       // the context's (or the pod's); "" if unknown
  std::string source;                           // "kubeconfig K (context C)", for messages
};

using ReadFileFn = std::function<Result<std::string>(const std::string& path)>;
using GetEnvFn = std::function<std::optional<std::string>(const char* name)>;

// Parses a kubeconfig (YAML; outside input). `context` empty: current-context. Relative file
// paths are taken relative to `path`'s directory, as kubectl does. Errors are INVALID_ARGUMENT
// or NOT_FOUND naming `path` and the missing or malformed entry.
Result<ApiEndpoint> ParseKubeconfig(std::string_view text, const std::string& path,
                                    std::string_view context, const ReadFileFn& read_file);

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// The in-cluster endpoint: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT with the
// token, ca.crt and namespace under `dir`. FAILED_PRECONDITION when not inside a pod.
Result<ApiEndpoint> InClusterEndpoint(const GetEnvFn& env, const ReadFileFn& read_file,
                                      std::string_view dir = kServiceAccountDir);

// kubectl's order: `kubeconfig` (a flag) if given, else $KUBECONFIG (its first path), else the
// in-cluster service account, else ~/.kube/config.
Result<ApiEndpoint> ResolveEndpoint(const std::string& kubeconfig, std::string_view context);

}  // namespace titan::k8s
