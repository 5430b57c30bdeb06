#include "src/trace/model.h"

namespace titan::trace {

std::string_view EventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::kCpuOp:
      return "cpu_op";
    case EventKind::kUserAnnotation:
      return "user_annotation";
    case EventKind::kPythonFunction:
      return "python_function";
    case EventKind::kCudaRuntime:
      return "cuda_runtime";
    case EventKind::kCudaDriver:
      return "cuda_driver";
    case EventKind::kCudaSync:
      return "cuda_sync";
    case EventKind::kKernel:
      return "kernel";
    case EventKind::kGpuMemcpy:
      return "gpu_memcpy";
    case EventKind::kGpuMemset:
      return "gpu_memset";
    case EventKind::kGpuUserAnnotation:
      return "gpu_user_annotation";
    case EventKind::kMtiaCcpEvent:
      return "mtia_ccp_events";
    case EventKind::kOther:
      return "other";
  }
  return "other";
}

std::string_view TraceFormatName(TraceFormat format) {
  return format == TraceFormat::kKineto ? "kineto" : "legacy-autograd";
}

StringId StringTable::Intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  StringId id = static_cast<StringId>(strings_.size());
  strings_.emplace_back(s);
  index_.emplace(std::string_view(strings_.back()), id);
  return id;
}

}  // namespace titan::trace
