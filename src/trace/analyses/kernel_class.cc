#include "src/trace/analyses/kernel_class.h"

#include <cctype>

namespace titan::trace {
namespace {

bool Contains(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

std::string Lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

}  // namespace

HtaKernelType HtaClassify(std::string_view name) {
  auto starts = [&](std::string_view prefix) { return name.starts_with(prefix); };
  if (starts("nccl") || starts("hip") || starts("hccl") || Contains(name, "ncclKernel")) {
    return HtaKernelType::kCommunication;
  }
  if (starts("Memcpy") || starts("Memset") || starts("dma")) return HtaKernelType::kMemory;
  // HTA's ComputeKernelGroupingPattern, an inverse match (re.match, so anchored at the start).
  const bool launch = starts("cuda") && name.find("LaunchKernel", 4) != std::string_view::npos;
  for (std::string_view part : {"Memcpy", "Memset", "dma", "Sync"}) {
    if (Contains(name, part)) return HtaKernelType::kOther;
  }
  for (std::string_view prefix : {"Stream Wait Event", "runFunction", "job_exe", "packet", "pe_exe",
                                  "cpum_exe_subgraph", "collective_subgraph_execution"}) {
    if (starts(prefix)) return HtaKernelType::kOther;
  }
  return launch ? HtaKernelType::kOther : HtaKernelType::kComputation;
}

std::string_view HtaKernelTypeName(HtaKernelType type) {
  switch (type) {
    case HtaKernelType::kComputation:
      return "COMPUTATION";
    case HtaKernelType::kCommunication:
      return "COMMUNICATION";
    case HtaKernelType::kMemory:
      return "MEMORY";
    case HtaKernelType::kOther:
      return "OTHER";
  }
  return "COMPUTATION";
}

bool IsCommunicationKernelName(std::string_view name) {
  return Contains(name, "ncclKernel") || Contains(name, "ncclDevKernel") ||
         Contains(name, "ncclDevFunc") || Contains(name, "rcclKernel") || Contains(name, "msccl") ||
         Contains(name, "mscclKernel") || Contains(name, "hccl") || Contains(name, "oneccl") ||
         Contains(name, "ccl::") || Contains(name, "nccl:") || Contains(name, "gloo:") ||
         Contains(name, "cross_device_reduce") || Contains(name, "all_reduce_kernel") ||
         Contains(name, "multimem_all_reduce");
}

GpuClass ClassifyGpuOp(EventKind kind, std::string_view name) {
  if (kind == EventKind::kGpuMemcpy || kind == EventKind::kGpuMemset) return GpuClass::kMemory;
  if (IsCommunicationKernelName(name)) return GpuClass::kCommunication;
  if (name.starts_with("Memcpy") || name.starts_with("Memset")) return GpuClass::kMemory;
  return GpuClass::kCompute;
}

std::string NormaliseCollective(std::string_view collective) {
  std::string out;
  for (char c : Lower(collective)) {
    if (c != '_' && c != ' ' && c != '-') out.push_back(c);
  }
  // "_allgather_base" -> "allgatherbase" -> "allgather"; "reduce_scatter_tensor" -> ...
  for (std::string_view suffix : {"base", "tensor", "coalesced", "into"}) {
    if (out.size() > suffix.size() && out.ends_with(suffix)) out.resize(out.size() - suffix.size());
  }
  if (out == "allgatherinto") out = "allgather";
  if (out == "alltoallv" || out == "alltoallsingle") out = "alltoall";
  return out;
}

std::string CollectiveOfName(std::string_view name) {
  std::string lower = Lower(name);
  std::string_view body = lower;
  // Strip prefixes: ncclkernel_, nccldevkernel_, gloo:, nccl:, c10d::, record_param_comms.
  for (std::string_view prefix :
       {"ncclkernel_", "nccldevkernel_", "rcclkernel_", "gloo:", "nccl:", "c10d::", "msccl"}) {
    if (body.starts_with(prefix)) {
      body.remove_prefix(prefix.size());
      break;
    }
  }
  if (body.size() == lower.size() && !IsCommunicationKernelName(name)) return "";
  std::string flat;
  for (char c : body) {
    if (c == '(' || c == '<') break;
    if (c != '_') flat.push_back(c);
  }
  static const char* kCollectives[] = {"reducescatter", "allreduce", "allgather", "alltoall",
                                       "broadcast",     "sendrecv",  "barrier",   "reduce",
                                       "send",          "recv",      "gather",    "scatter"};
  for (const char* c : kCollectives) {
    if (flat.starts_with(c)) return c;
  }
  return "";
}

}  // namespace titan::trace
