// Classification of GPU activity and collective names.
//
// HTA-compatible classes use HTA's own name patterns (hta/common/types.py, v0.6.1): names
// starting "nccl", "hip" or "hccl", or containing "ncclKernel", are communication (so HIP's
// hipMemcpy* too); names starting "Memcpy", "Memset" or "dma" are memory; names matching none of
// HTA's non-compute patterns (containing "Memcpy", "Memset", "dma" or "Sync", starting "Stream
// Wait Event", "runFunction", "job_exe", "packet", "pe_exe", ...) are computation; the rest
// (CUDA "Stream Sync", MTIA "pe_exe", ...) are "other", which HTA leaves out of its kernel
// tables but not of the temporal breakdown's busy time. titan's own classes also recognise RCCL,
// MSCCL, oneCCL and gloo, and use the event category for memory copies and sets.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "src/trace/model.h"

namespace titan::trace {

enum class HtaKernelType { kComputation = 0, kCommunication = 1, kMemory = 2, kOther = 3 };
HtaKernelType HtaClassify(std::string_view name);
std::string_view HtaKernelTypeName(HtaKernelType type);  // "COMPUTATION", ..., "OTHER"

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
