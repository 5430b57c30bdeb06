// NCCL's own WARN and INFO lines ("host:pid:tid [cudaDev] file:line NCCL WARN ..."), in the
// formats NCCL versions have used.
#include <fmt/format.h>

#include "src/diagnose/rules/line_rule.h"

namespace titan::diagnose {
namespace {

using FC = FaultClass;
using A = Action;

// NET/IB : Got completion from peer 10.0.0.2<54862> with status=12 opcode=0 len=0 vendor err
// 129 (2.2x) or "with error 12, opcode 0, len 0, vendor err 129" (2.1x). The status is
// ibv_wc_status.
bool RefineIbCompletion(const RuleMatch& m, Finding* f) {
  const int64_t status = CaptureInt(m.groups[2], -1);
  std::string_view peer = m.groups[0];
  std::string_view vendor = m.groups[3];
  switch (status) {
    case 4:  // IBV_WC_LOC_PROT_ERR
      f->fault = FC::kNcclConfig;
      f->action = A::kFixConfig;
      f->confidence = 0.7;
      f->blame.node = true;
      f->detail = fmt::format(
          "InfiniBand local protection error (status 4, vendor err {}) talking to {}: "
          "GPUDirect RDMA is broken on this host, usually by PCIe ACS left enabled; disable "
          "ACS (or test with NCCL_NET_GDR_LEVEL=0)",
          vendor, peer);
      break;
    case 5:  // IBV_WC_WR_FLUSH_ERR: flushed after an earlier error on the queue pair
      f->tier = Tier::kSymptom;
      f->confidence = 0.3;
      f->detail =
          "InfiniBand work request flushed (status 5): a consequence of an earlier "
          "error on the same connection";
      break;
    case 12:  // IBV_WC_RETRY_EXC_ERR
    case 13:  // IBV_WC_RNR_RETRY_EXC_ERR
      f->detail = fmt::format(
          "InfiniBand transport retries exhausted (status {}, vendor err {}) talking to {}: "
          "the two NICs cannot reach each other (a link, cable or switch port; at start-up, "
          "often the routing/GID index: NCCL_IB_GID_INDEX)",
          status, vendor, peer);
      break;
    default:
      f->detail = fmt::format("InfiniBand completion error status {} (vendor err {}) with {}",
                              status, vendor, peer);
      break;
  }
  return true;
}

// Call to ibv_modify_qp failed with error No such device
bool RefineIbvCall(const RuleMatch& m, Finding* f) {
  std::string_view call = m.groups[0], error = m.groups[1];
  if (call == "ibv_reg_mr" || call == "ibv_reg_mr_iova2" || Contains(error, "Cannot allocate")) {
    f->fault = FC::kNcclConfig;
    f->action = A::kFixConfig;
    f->detail = fmt::format(
        "{} failed ({}): memory registration; check the locked-memory limit (ulimit -l "
        "unlimited in the container) and GPUDirect (nvidia-peermem)",
        call, error);
    return true;
  }
  f->detail = fmt::format(
      "{} failed ({}): the InfiniBand/RoCE device is not usable from this host or container "
      "(device, port or GID missing)",
      call, error);
  return true;
}

bool RefineSocketCall(const RuleMatch& m, Finding* f) {
  std::string_view error = m.groups.back();
  if (Contains(error, "timed out") || Contains(error, "No route") ||
      Contains(error, "unreachable")) {
    f->tier = Tier::kCause;
    f->confidence = 0.6;
  }
  f->detail = fmt::format(
      "a socket to a peer failed ({}): the peer process died or the network between the "
      "nodes failed",
      error);
  return true;
}

constexpr LineRule kNcclRules[] = {
    {"ib_completion",
     Family::kNccl,
     RuleRole::kFinding,
     R"(NET/IB ?: Got completion from peer ([^ ]+) with (error |status=)([0-9]+),? opcode[ =][0-9]+,? len[ =][0-9]+,? vendor err ([0-9]+))",
     Tier::kCause,
     FC::kNetwork,
     A::kFixNetwork,
     0.6,
     {},
     "",
     RefineIbCompletion},
    {"ib_async_event", Family::kNccl, RuleRole::kFinding,
     R"(NET/IB ?: Got async (error )?event ?: ?(.*))", Tier::kCause, FC::kNetwork, A::kFixNetwork,
     0.6, kBlameNode,
     "the InfiniBand device reported an asynchronous error (port down, catastrophic error)"},
    {"ibv_call_failed", Family::kNccl, RuleRole::kFinding,
     R"((Call to )?(ibv_[a-z_0-9]+) failed( with error)? ?(.*))", Tier::kCause, FC::kNetwork,
     A::kFixNetwork, 0.65, kBlameNode, "",
     [](const RuleMatch& m, Finding* f) {
       std::string_view groups[2] = {m.groups[1], m.groups[3]};
       RuleMatch g{m.line, groups, m.before};
       return RefineIbvCall(g, f);
     }},
    {"shm_open_failed", Family::kNccl, RuleRole::kFinding, R"(Call to shm_open failed ?: ?(.*))",
     Tier::kCause, FC::kNcclConfig, A::kFixConfig, 0.8, kBlameNode,
     "NCCL cannot create its shared-memory segments in /dev/shm (permissions or a missing "
     "mount): fix /dev/shm in the container/host, or set NCCL_SHM_DISABLE=1"},
    {"shm_extend_failed", Family::kNccl, RuleRole::kFinding,
     R"(failed to extend (/dev/shm/[^ ]+) to ([0-9]+) bytes)", Tier::kCause, FC::kNcclConfig,
     A::kFixConfig, 0.8, kBlameNode,
     "/dev/shm is too small for NCCL's shared-memory transport: give the container a larger "
     "/dev/shm (docker --shm-size) or set NCCL_SHM_DISABLE=1"},
    {"shm_segment_failed",
     Family::kNccl,
     RuleRole::kFinding,
     R"(Error while creating shared memory segment)",
     Tier::kSymptom,
     FC::kNcclConfig,
     A::kFixConfig,
     0.4,
     {},
     "NCCL could not create a shared-memory segment; the WARN before it says why"},
    {"nccl_cuda_failure",
     Family::kNccl,
     RuleRole::kFinding,
     R"(NCCL WARN Cuda failure '([^']*)')",
     Tier::kCause,
     FC::kCudaSoftware,
     A::kRestartApp,
     0.6,
     {},
     "",
     [](const RuleMatch& m, Finding* f) {
       std::string_view msg = m.groups[0];
       if (Contains(msg, "out of memory")) {
         f->fault = FC::kOomGpu;
         f->action = A::kReduceMemory;
         f->detail = "NCCL could not allocate GPU memory for its buffers: the GPU is full";
       } else if (Contains(msg, "peer access")) {
         f->fault = FC::kNcclConfig;
         f->action = A::kFixConfig;
         f->detail =
             "GPU peer-to-peer access is not possible on this host (PCIe ACS or the "
             "IOMMU in the way): fix the host, or set NCCL_P2P_DISABLE=1";
       } else {
         f->detail = fmt::format("a CUDA call inside NCCL failed: {}", msg);
       }
       f->blame.node = true;
       return true;
     }},
    {"duplicate_gpu",
     Family::kNccl,
     RuleRole::kFinding,
     R"(Duplicate GPU detected)",
     Tier::kCause,
     FC::kUserCode,
     A::kFixConfig,
     0.8,
     {},
     "two ranks use the same GPU: set the device from LOCAL_RANK (torch.cuda.set_device)"},
    {"socket_call_failed",
     Family::kNccl,
     RuleRole::kFinding,
     R"(Call to (recv|send|connect|accept|poll)[^:]* failed ?: ?(Connection reset by peer|Connection refused|Broken pipe|Connection timed out|No route to host|Network is unreachable))",
     Tier::kGeneric,
     FC::kNetwork,
     A::kFixNetwork,
     0.45,
     {},
     "",
     RefineSocketCall},
    {"socket_connect_failed",
     Family::kNccl,
     RuleRole::kFinding,
     R"(Connect to ([^ ]+) failed ?: ?(.*))",
     Tier::kGeneric,
     FC::kNetwork,
     A::kFixNetwork,
     0.45,
     {},
     "",
     RefineSocketCall},
    {"socket_peer_closed",
     Family::kNccl,
     RuleRole::kFinding,
     R"((Net|NET/Socket) ?: Connection closed by remote peer)",
     Tier::kGeneric,
     FC::kNetwork,
     A::kFixNetwork,
     0.3,
     {},
     "a peer closed its NCCL connection: it died, or the network dropped it"},
    {"socket_connect_retries",
     Family::kNccl,
     RuleRole::kFinding,
     R"(connect returned ([A-Za-z ]+), exceeded error retry count)",
     Tier::kGeneric,
     FC::kNetwork,
     A::kFixNetwork,
     0.45,
     {},
     "NCCL gave up connecting to a peer's socket (the peer not listening or not reachable)"},
    {"no_socket_interface", Family::kNccl, RuleRole::kFinding,
     R"(Bootstrap ?: no socket interface found|no usable (network )?interface|unable to find any (network )?interface)",
     Tier::kCause, FC::kNcclConfig, A::kFixConfig, 0.75, kBlameNode,
     "NCCL found no usable network interface: set NCCL_SOCKET_IFNAME to the right one"},
    {"proxy_failed",
     Family::kNccl,
     RuleRole::kFinding,
     R"(\[Proxy Service [0-9]+\] Failed to execute operation)",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.2,
     {},
     "NCCL's proxy thread failed after an earlier error"},
    {"nccl_return_trace",
     Family::kNccl,
     RuleRole::kFinding,
     R"(NCCL INFO [^ ]+:[0-9]+ -> [0-9]+)",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.1,
     {},
     "NCCL's return-code trace of an error reported above it"},
    {"nccl_warn",
     Family::kNccl,
     RuleRole::kFinding,
     R"( NCCL WARN (.*))",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.15,
     {},
     "an NCCL warning titan has no rule for"},
};

}  // namespace

std::span<const LineRule> NcclRules() { return kNcclRules; }

}  // namespace titan::diagnose
