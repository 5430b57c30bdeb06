// Entry point of `titan k8s` (tools/titan/main.cc dispatches here): crd, manifests, cordon,
// controller.
#pragma once

namespace titan::k8s {

// Returns 0 on success, 1 when the operation failed (a message on stderr names the API server,
// the object, the HTTP status and what to do), 2 for a usage error.
int K8sCommand(int argc, char** argv);

}  // namespace titan::k8s
