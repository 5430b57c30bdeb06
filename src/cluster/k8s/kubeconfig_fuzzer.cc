// Fuzzes the kubeconfig parser (and under it the YAML->JSON conversion and the LLMJob reader):
// a user's file, outside input. Must never crash, hang or recurse without bound; an accepted
// kubeconfig always names a http(s) server.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "src/cluster/k8s/kubeconfig.h"
#include "src/cluster/k8s/llmjob.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  titan::k8s::ReadFileFn no_files = [](const std::string& path) -> titan::Result<std::string> {
    return titan::NotFoundError(path);
  };
  auto endpoint = titan::k8s::ParseKubeconfig(input, "/fuzz/config", "", no_files);
  if (endpoint.ok() && endpoint->server.rfind("http", 0) != 0) __builtin_trap();
  auto job = titan::k8s::LoadLlmJobText(input, "fuzz");
  if (job.ok() && !(job->min_replicas <= job->replicas && job->replicas <= job->max_replicas)) {
    __builtin_trap();
  }
  return 0;
}
