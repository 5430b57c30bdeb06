// Kernel log lines (dmesg, journalctl -k): NVIDIA Xids, GPUs lost from the bus, PCIe AER, the
// OOM killer, segfaults, storage errors.
#include <fmt/format.h>

#include "src/diagnose/rules/line_rule.h"
#include "src/diagnose/xid_catalog.h"

namespace titan::diagnose {
namespace {

using FC = FaultClass;
using A = Action;

// NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
bool RefineXid(const RuleMatch& m, Finding* f) {
  f->xid = static_cast<int>(CaptureInt(m.groups[1], 0));
  f->where.gpu = NormalizePci(m.groups[0]);
  f->pid = CaptureInt(m.groups[3]);
  const XidInfo* info = FindXid(f->xid);
  if (info == nullptr) {
    f->fault = FC::kUnknown;
    f->action = A::kNone;
    f->tier = Tier::kGeneric;
    f->confidence = 0.3;
    f->detail =
        fmt::format("Xid {} is not in titan's catalog: look it up in NVIDIA's Xid catalog", f->xid);
    return true;
  }
  f->fault = info->fault;
  f->action = info->action;
  f->tier = info->follows_other ? Tier::kGeneric : Tier::kCause;
  f->confidence = info->follows_other ? 0.5 : 0.85;
  f->blame.node = IsHardwareClass(info->fault);
  f->detail = fmt::format("Xid {}: {}", f->xid, info->name);
  return true;
}

// The GPU named on the line, or by the line before it (the driver splits "The NVIDIA GPU
// 0000:3b:00.0 (PCI ID: ...) installed in this system has fallen off the bus" over lines).
bool RefineFallenOff(const RuleMatch& m, Finding* f) {
  std::string gpu = m.groups[0].empty() ? "" : NormalizePci(m.groups[0]);
  for (int back = 1; gpu.empty() && back <= 3; ++back) {
    std::string_view prev = m.before.Line(back);
    size_t at = prev.find("NVIDIA GPU ");
    if (at == std::string_view::npos) continue;
    std::string_view rest = prev.substr(at + 11);
    gpu = NormalizePci(rest.substr(0, rest.find_first_of(" (")));
  }
  f->where.gpu = gpu;
  return true;
}

// pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer
bool RefineAer(const RuleMatch& m, Finding* f) {
  std::string_view driver = m.groups[0], device = m.groups[1], severity = m.groups[2];
  if (driver == "nvidia") f->where.gpu = NormalizePci(device);
  if (severity.starts_with("Uncorrected (Fatal)")) {
    f->action = A::kDrainNode;
    f->confidence = 0.85;
  } else if (severity.starts_with("Uncorrected")) {
    f->action = A::kRebootNode;
    f->confidence = 0.7;
  } else {
    // Corrected errors are corrected; a flood of them, or a GPU gone with them, is not.
    f->action = A::kNone;
    f->confidence = 0.5;
  }
  f->detail = fmt::format(
      "PCIe AER {} error at {} {}: the link to the device below it is failing{}", severity, driver,
      device,
      f->action == A::kNone ? "; corrected errors need action only when they flood or a GPU is "
                              "lost with them"
                            : "; take the node out for a hardware check");
  return true;
}

// nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)
bool RefineAerFollowUp(const RuleMatch& m, Finding* f) {
  if (m.groups[0] == "nvidia") {
    f->where.gpu = NormalizePci(m.groups[1]);
    f->blame.gpu = true;
  }
  return true;
}

// Groups: "Memory cgroup " (or empty), "ed", pid, process name.
bool RefineOomKill(const RuleMatch& m, Finding* f) {
  f->pid = CaptureInt(m.groups[2]);
  const bool cgroup = !m.groups[0].empty();
  f->detail = fmt::format(
      "the kernel's {}OOM killer killed {} (pid {}): {} memory ran out; reduce host memory "
      "use (data loader workers, pinned buffers, CPU offload) or add memory/swap",
      cgroup ? "cgroup " : "", m.groups[3], f->pid, cgroup ? "the cgroup's" : "host");
  return true;
}

bool RefinePid1(const RuleMatch& m, Finding* f) {
  f->pid = CaptureInt(m.groups[1]);
  return true;
}

bool RefineGpuOnly(const RuleMatch& m, Finding* f) {
  f->where.gpu = NormalizePci(m.groups[0]);
  return true;
}

constexpr LineRule kKernelRules[] = {
    {"xid", Family::kKernel, RuleRole::kFinding,
     R"(NVRM: Xid \(([^)]*)\): ([0-9]+)(, pid=[']?([0-9]*))?)", Tier::kCause, FC::kUnknown,
     A::kNone, 0.85, kBlameGpu, "", RefineXid},
    {"gpu_fell_off_bus", Family::kKernel, RuleRole::kFinding,
     R"(NVRM: GPU ([0-9A-Fa-f:.]+): GPU has fallen off the bus)", Tier::kGeneric, FC::kGpuHardware,
     A::kDrainNode, 0.8, kBlameGpuNode,
     "the GPU has fallen off the bus: the node cannot use it until it is rebooted; drain the node",
     RefineGpuOnly},
    {"gpu_fell_off_bus_multiline", Family::kKernel, RuleRole::kFinding,
     R"(NVRM: ([A-Za-z ]*)(has fallen off the bus))", Tier::kGeneric, FC::kGpuHardware,
     A::kDrainNode, 0.75, kBlameGpuNode,
     "the GPU has fallen off the bus: the node cannot use it until it is rebooted; drain the node",
     RefineFallenOff},
    {"gsp_rate_limit", Family::kKernel, RuleRole::kFinding,
     R"(NVRM: Rate limiting GSP RPC error prints for GPU at PCI:([0-9A-Fa-f:.]+))", Tier::kSymptom,
     FC::kGpuHardware, A::kResetGpu, 0.6, kBlameGpu,
     "the driver keeps timing out on the GPU's GSP and says it likely needs a reset",
     RefineGpuOnly},
    {"rm_init_failed", Family::kKernel, RuleRole::kFinding,
     R"(NVRM: (GPU ([0-9A-Fa-f:.]+): )?RmInitAdapter failed)", Tier::kCause, FC::kGpuHardware,
     A::kDrainNode, 0.7, kBlameGpuNode,
     "the driver could not initialise the GPU: take the node out for a hardware check",
     [](const RuleMatch& m, Finding* f) {
       f->where.gpu = NormalizePci(m.groups[1]);
       return true;
     }},
    {"pcie_aer", Family::kKernel, RuleRole::kFinding,
     R"(([a-z0-9_]+) ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): PCIe Bus Error: severity=([A-Za-z]+( \([A-Za-z-]+\))?))",
     Tier::kCause, FC::kGpuHardware, A::kNone, 0.6, kBlameGpuNode, "", RefineAer},
    {"pcie_aer_follow_up",
     Family::kKernel,
     RuleRole::kFinding,
     R"(([a-z0-9_]+) ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): AER: (can't recover|device recovery failed|Root Port link has been reset|(Multiple )?(Corrected|Uncorrected) .*error received))",
     Tier::kSymptom,
     FC::kGpuHardware,
     A::kNone,
     0.4,
     {},
     "the PCIe error handling that follows an AER error",
     RefineAerFollowUp},
    {"oom_kill", Family::kKernel, RuleRole::kFinding,
     R"((Memory cgroup )?[Oo]ut of memory: Kill(ed)? process ([0-9]+) \(([^)]*)\))", Tier::kCause,
     FC::kOomHost, A::kReduceMemory, 0.9, kBlameNode, "", RefineOomKill},
    {"oom_killer_invoked", Family::kKernel, RuleRole::kFinding, R"(invoked oom-killer: )",
     Tier::kSymptom, FC::kOomHost, A::kReduceMemory, 0.7, kBlameNode,
     "a process asked for memory the host did not have: the OOM killer ran"},
    {"oom_kill_constraint", Family::kKernel, RuleRole::kFinding,
     R"(oom-kill:constraint=[^,]*,.*pid=([0-9]+))", Tier::kSymptom, FC::kOomHost, A::kReduceMemory,
     0.7, kBlameNode, "the OOM killer's choice of victim",
     [](const RuleMatch& m, Finding* f) {
       f->pid = CaptureInt(m.groups[0]);
       return true;
     }},
    {"oom_reaper",
     Family::kKernel,
     RuleRole::kFinding,
     R"(oom_reaper: reaped process ([0-9]+))",
     Tier::kSymptom,
     FC::kOomHost,
     A::kReduceMemory,
     0.6,
     {},
     "the OOM killer's victim reaped",
     [](const RuleMatch& m, Finding* f) {
       f->pid = CaptureInt(m.groups[0]);
       return true;
     }},
    {"segfault",
     Family::kKernel,
     RuleRole::kFinding,
     R"(([^ \[]+)\[([0-9]+)\]: segfault at [0-9a-f]+ ip)",
     Tier::kGeneric,
     FC::kCudaSoftware,
     A::kRestartApp,
     0.5,
     {},
     "a process died of a segmentation fault (a bug in native code: the framework, an "
     "extension, or the driver); restart, and if it repeats at the same place, report it",
     RefinePid1},
    {"general_protection",
     Family::kKernel,
     RuleRole::kFinding,
     R"(traps: ([^ \[]+)\[([0-9]+)\] general protection fault)",
     Tier::kGeneric,
     FC::kCudaSoftware,
     A::kRestartApp,
     0.5,
     {},
     "a process died of a general protection fault in native code",
     RefinePid1},
    {"peermem_error",
     Family::kKernel,
     RuleRole::kFinding,
     R"(nvidia-peermem [^ ]+ ERROR )",
     Tier::kGeneric,
     FC::kUnknown,
     A::kNone,
     0.2,
     {},
     "nvidia-peermem (GPUDirect RDMA) reported an error; alone it names no cause"},
    {"nvswitch_sxid", Family::kKernel, RuleRole::kFinding,
     R"(nvidia-nvswitch[0-9]*: SXid \(PCI:([0-9A-Fa-f:.]+)\): ([0-9]+), ([A-Za-z-]+))",
     Tier::kCause, FC::kNvlink, A::kRebootNode, 0.7, kBlameNode, "",
     [](const RuleMatch& m, Finding* f) {
       if (m.groups[2] != "Fatal") {
         f->tier = Tier::kSymptom;
         f->action = A::kNone;
         f->confidence = 0.3;
         f->detail = fmt::format("a non-fatal NVSwitch error (SXid {})", m.groups[1]);
         return true;
       }
       f->detail = fmt::format(
           "a fatal NVSwitch error (SXid {}): NVLink traffic of the node's GPUs is broken; reset "
           "the fabric (reboot the node)",
           m.groups[1]);
       return true;
     }},
    {"hung_task",
     Family::kKernel,
     RuleRole::kFinding,
     R"(INFO: task ([^ :]+):([0-9]+) blocked for more than ([0-9]+) seconds)",
     Tier::kGeneric,
     FC::kStorage,
     A::kNone,
     0.35,
     {},
     "a task sat in uninterruptible sleep for minutes: usually I/O (NFS, Lustre, a failing "
     "disk) or a driver call that does not return",
     RefinePid1},
    {"nfs_not_responding",
     Family::kKernel,
     RuleRole::kFinding,
     R"(nfs: server ([^ ]+) not responding)",
     Tier::kCause,
     FC::kStorage,
     A::kFixConfig,
     0.7,
     {},
     "the NFS server stopped answering: reads and writes (checkpoints, data) hang"},
    {"lustre_error",
     Family::kKernel,
     RuleRole::kFinding,
     R"(LustreError: )",
     Tier::kCause,
     FC::kStorage,
     A::kFixConfig,
     0.6,
     {},
     "the Lustre client reported an error"},
    {"block_io_error", Family::kKernel, RuleRole::kFinding,
     R"((blk_update_request|I/O error, dev [a-z0-9]+|EXT4-fs error|XFS .*(I/O error|[Cc]orruption)))",
     Tier::kCause, FC::kStorage, A::kFixConfig, 0.65, kBlameNode,
     "the disk or file system returned errors: check the device and its file system"},
};

}  // namespace

std::span<const LineRule> KernelRules() { return kKernelRules; }

}  // namespace titan::diagnose
