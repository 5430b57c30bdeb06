// The LLMJob CustomResourceDefinition, deploy/k8s/llmjob-crd.yaml, compiled into titan at build
// time (crd_yaml.cc.in): that file is the one source of truth, `titan k8s crd` prints it.
#pragma once

#include <string_view>

namespace titan::k8s {

std::string_view LlmJobCrdYaml();

}  // namespace titan::k8s
