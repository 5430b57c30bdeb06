// Classification of GPU activity and collective names.
//
// HTA-compatible classes use HTA's own name patterns ("ncclKernel" = communication,
// "Memcpy"/"Memset" = memory, anything else = computation), which miss NCCL >= 2.19's
// ncclDevKernel_* and other vendors. titan's classes also recognise ncclDevKernel_*, RCCL
// (AMD ships NCCL-named kernels), MSCCL, HCCL, oneCCL and gloo, and use the event category for
// memory copies and sets.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "src/trace/model.h"

namespace titan::trace {

enum class HtaKernelType { kComputation = 0, kCommunication = 1, kMemory = 2 };
HtaKernelType HtaClassify(std::string_view name);
std::string_view HtaKernelTypeName(HtaKernelType type);  // "COMPUTATION", ...

enum class GpuClass { kCompute, kCommunication, kMemory };
GpuClass ClassifyGpuOp(EventKind kind, std::string_view name);
bool IsCommunicationKernelName(std::string_view name);

// The collective of a kernel or CPU op name, normalised: "allreduce", "allgather",
// "reducescatter", "broadcast", "reduce", "alltoall", "sendrecv", "send", "recv", "barrier";
// "" when the name is not a collective.
std::string CollectiveOfName(std::string_view name);
// Normalises a "Collective name" argument ("all_reduce", "allreduce", "_allgather_base").
std::string NormaliseCollective(std::string_view collective);

}  // namespace titan::trace
