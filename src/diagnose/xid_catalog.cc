#include "src/diagnose/xid_catalog.h"

#include <algorithm>
#include <array>

namespace titan::diagnose {
namespace {

using FC = FaultClass;
using A = Action;

// Sorted by code (FindXid binary-searches).
constexpr XidInfo kXids[] = {
    {8, "GPU stopped processing (idle timeout)", FC::kCudaSoftware, A::kRestartApp},
    {11, "invalid or corrupted push buffer stream", FC::kCudaSoftware, A::kRestartApp},
    {13, "graphics engine exception (a kernel faulted: out-of-range address, illegal instruction)",
     FC::kCudaSoftware, A::kRestartApp},
    {25, "invalid or illegal push buffer stream", FC::kCudaSoftware, A::kRestartApp},
    {31, "GPU memory page fault (a kernel accessed an unmapped address)", FC::kCudaSoftware,
     A::kRestartApp},
    {32, "invalid or corrupted push buffer stream (PBDMA)", FC::kCudaSoftware, A::kRestartApp},
    {37, "driver firmware error", FC::kGpuHardware, A::kNone},
    {38, "driver firmware watchdog timeout", FC::kGpuHardware, A::kNone},
    {39, "copy engine exception", FC::kCudaSoftware, A::kRestartApp},
    {40, "copy engine exception", FC::kCudaSoftware, A::kRestartApp},
    {41, "copy engine exception", FC::kCudaSoftware, A::kRestartApp},
    {43, "GPU stopped processing the faulting application's channel", FC::kCudaSoftware, A::kNone,
     true},
    {44, "graphics engine fault during context switch", FC::kGpuHardware, A::kNone},
    {45, "preemptive cleanup after earlier errors", FC::kCudaSoftware, A::kNone, true},
    {46, "GPU stopped processing (GPU timeout)", FC::kGpuHardware, A::kResetGpu},
    {48, "double-bit ECC error", FC::kGpuMemoryEcc, A::kRebootNode},
    {54, "auxiliary power is not connected to the GPU board", FC::kGpuHardware, A::kDrainNode},
    {56, "display engine error", FC::kGpuHardware, A::kNone},
    {57, "error programming video memory interface", FC::kGpuHardware, A::kDrainNode},
    {58, "unstable video memory interface", FC::kGpuMemoryEcc, A::kDrainNode},
    {61, "internal micro-controller breakpoint/warning", FC::kGpuHardware, A::kResetGpu},
    {62, "internal micro-controller halt", FC::kGpuHardware, A::kResetGpu},
    {63, "GPU memory page retirement/remapping event", FC::kGpuMemoryEcc, A::kNone},
    {64, "GPU memory page retirement/remapping failure", FC::kGpuMemoryEcc, A::kResetGpu},
    {68, "video decoder exception", FC::kCudaSoftware, A::kRestartApp},
    {69, "graphics engine class error", FC::kCudaSoftware, A::kRestartApp},
    {74, "NVLink error", FC::kNvlink, A::kResetGpu},
    {79, "GPU has fallen off the bus", FC::kGpuHardware, A::kDrainNode},
    {80, "corrupted data sent to the GPU", FC::kCudaSoftware, A::kRestartApp},
    {92, "high single-bit ECC error rate", FC::kGpuMemoryEcc, A::kNone},
    {93, "InfoROM wear limit reached", FC::kGpuHardware, A::kNone},
    {94, "contained ECC memory error", FC::kGpuMemoryEcc, A::kRebootNode},
    {95, "uncontained ECC memory error", FC::kGpuMemoryEcc, A::kRebootNode},
    {109, "context switch timeout", FC::kGpuHardware, A::kResetGpu},
    {110, "security fault", FC::kGpuHardware, A::kResetGpu},
    {119, "GSP RPC timeout", FC::kGpuHardware, A::kResetGpu},
    {120, "GSP error", FC::kGpuHardware, A::kResetGpu},
    {121, "C2C link error", FC::kGpuHardware, A::kNone},
    {136, "NVLink link training failed", FC::kNvlink, A::kResetGpu},
    {137, "NVLink privilege error", FC::kNvlink, A::kNone},
    {140, "unrecovered ECC error", FC::kGpuMemoryEcc, A::kResetGpu},
    {143, "GPU initialization error", FC::kGpuHardware, A::kResetGpu},
    {144, "NVLink SAW error", FC::kNvlink, A::kRebootNode},
    {145, "NVLink RLW error", FC::kNvlink, A::kRebootNode},
    {146, "NVLink TLW error", FC::kNvlink, A::kRebootNode},
    {147, "NVLink TREX error", FC::kNvlink, A::kRebootNode},
    {148, "NVLink NVLPW control error", FC::kNvlink, A::kRebootNode},
    {149, "NVLink NETIR error", FC::kNvlink, A::kRebootNode},
    {150, "NVLink MSE error", FC::kNvlink, A::kRebootNode},
    {154, "GPU recovery action changed (follows another Xid)", FC::kGpuHardware, A::kNone, true},
    {155, "NVLink software-defined error", FC::kNvlink, A::kResetGpu},
    {156, "resource retirement event", FC::kGpuMemoryEcc, A::kResetGpu},
    {157, "resource retirement failure", FC::kGpuMemoryEcc, A::kDrainNode},
    {158, "GPU fatal timeout", FC::kGpuHardware, A::kResetGpu},
    {167, "PCIe fatal timeout", FC::kGpuHardware, A::kDrainNode},
    {168, "reduced GPU memory capacity", FC::kGpuMemoryEcc, A::kDrainNode},
    {169, "internal micro-controller (SEC2) halt", FC::kGpuHardware, A::kResetGpu},
    {171, "uncorrectable DRAM error", FC::kGpuMemoryEcc, A::kRebootNode},
    {172, "uncorrectable SRAM error", FC::kGpuMemoryEcc, A::kRebootNode},
};

}  // namespace

const XidInfo* FindXid(int code) {
  auto it = std::lower_bound(std::begin(kXids), std::end(kXids), code,
                             [](const XidInfo& x, int c) { return x.code < c; });
  return it != std::end(kXids) && it->code == code ? &*it : nullptr;
}

}  // namespace titan::diagnose
