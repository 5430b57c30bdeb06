// Names that titan puts into Kubernetes API paths, checked before a request is made: a name is
// a path segment ("/api/v1/nodes/NAME"), so "../namespaces/default/pods/victim" would send the
// request to another resource (`titan k8s cordon` did). The API server's own rules:
//   * DNS-1123 subdomain (Nodes, Pods, Jobs, LLMJobs): at most 253 characters of [a-z0-9.-],
//     starting and ending with [a-z0-9], each dot-separated part non-empty;
//   * DNS-1123 label (Namespaces): at most 63 characters of [a-z0-9-], starting and ending with
//     [a-z0-9].
// Anything else is INVALID_ARGUMENT naming what the name was for and the rule, quoted escaped.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "src/base/status.h"

namespace titan::k8s {

Status CheckSubdomainName(std::string_view name, std::string_view what);
Status CheckLabelName(std::string_view name, std::string_view what);

// A query parameter's value percent-encoded (RFC 3986 unreserved characters stay): a
// continue token or resourceVersion from the server cannot add parameters of its own.
std::string QueryValue(std::string_view value);

// API paths of checked names (the caller checked them, or the Result says why not).
Result<std::string> NodePath(std::string_view node);
Result<std::string> PodPath(std::string_view namespace_, std::string_view pod);

}  // namespace titan::k8s
