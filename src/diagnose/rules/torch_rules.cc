// Worker output: PyTorch and CUDA errors, ProcessGroupNCCL's watchdog, c10d rendezvous,
// torchrun's failure summary, launchers, Python exceptions.
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "src/diagnose/rules/line_rule.h"

namespace titan::diagnose {
namespace {

using FC = FaultClass;
using A = Action;

// What a CUDA error message means (torch's "CUDA error: X", NCCL's "Cuda failure 'X'").
void ClassifyCudaMessage(std::string_view msg, Finding* f) {
  f->blame.rank = true;
  if (Contains(msg, "out of memory")) {
    Decide(f, FC::kOomGpu, A::kReduceMemory, Tier::kCause, 0.85,
           "the GPU ran out of memory: reduce the batch or sequence length, or shard/offload");
  } else if (Contains(msg, "device-side assert")) {
    f->fault = FC::kUserCode;
    f->action = A::kFixCode;
    f->tier = Tier::kGeneric;
    f->confidence = 0.7;
    f->detail =
        "a device-side assertion failed (usually an index out of range: labels, "
        "embedding or vocabulary sizes); the assertion line above says which";
  } else if (Contains(msg, "ECC")) {
    Decide(f, FC::kGpuMemoryEcc, A::kRebootNode, Tier::kCause, 0.8,
           "the GPU reported an uncorrectable ECC error: its memory needs remapping");
  } else if (Contains(msg, "no CUDA-capable device") || Contains(msg, "invalid device ordinal") ||
             Contains(msg, "busy or unavailable")) {
    f->fault = FC::kScheduler;
    f->action = A::kFixConfig;
    f->tier = Tier::kCause;
    f->confidence = 0.6;
    f->detail =
        "the process cannot use the GPU it was given (CUDA_VISIBLE_DEVICES, the "
        "scheduler's GPU allocation, or another process holding it)";
  } else if (Contains(msg, "driver version is insufficient")) {
    Decide(f, FC::kCudaSoftware, A::kFixConfig, Tier::kCause, 0.8,
           "the NVIDIA driver is older than the CUDA runtime needs");
  } else if (Contains(msg, "illegal memory access") || Contains(msg, "illegal instruction") ||
             Contains(msg, "misaligned address") || Contains(msg, "unspecified launch failure") ||
             Contains(msg, "an illegal") || Contains(msg, "launch timed out") ||
             Contains(msg, "ILLEGAL_ADDRESS")) {
    f->fault = FC::kCudaSoftware;
    f->action = A::kRestartApp;
    f->tier = Tier::kCause;
    f->confidence = 0.75;
    f->detail =
        "a CUDA kernel faulted: restart; if it repeats at the same step, it is a bug in "
        "a kernel (run with CUDA_LAUNCH_BLOCKING=1 to find it)";
  } else {
    Decide(f, FC::kCudaSoftware, A::kRestartApp, Tier::kGeneric, 0.4, "a CUDA call failed");
  }
}

bool RefineCudaError(const RuleMatch& m, Finding* f) {
  ClassifyCudaMessage(m.groups.back(), f);
  return true;
}

// torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.78 GiB. GPU 0 has a total
// capacity of 23.69 GiB of which 875.62 MiB is free. ...
bool RefineCudaOom(const RuleMatch& m, Finding* f) {
  std::string_view line = m.line;
  auto after = [&](std::string_view key, std::string_view stop) -> std::string_view {
    size_t at = line.find(key);
    if (at == std::string_view::npos) return {};
    std::string_view rest = line.substr(at + key.size());
    return rest.substr(0, rest.find(stop));
  };
  std::string_view tried = after("Tried to allocate ", ".");
  std::string_view total = after("total capacity of ", " ");
  std::string_view free_mem = after("of which ", " is free");
  std::string_view by_torch = after("Of the allocated memory ", " is allocated");
  f->detail = "the GPU ran out of memory";
  if (!tried.empty()) f->detail += fmt::format(" allocating {}", tried);
  if (!total.empty()) f->detail += fmt::format(" (capacity {}", total);
  if (!free_mem.empty()) f->detail += fmt::format(", {} free", free_mem);
  if (!by_torch.empty()) f->detail += fmt::format(", {} held by PyTorch", by_torch);
  if (!total.empty()) f->detail += ")";
  f->detail +=
      ": reduce the micro-batch or sequence length, use activation checkpointing, or "
      "shard/offload optimizer state";
  if (Contains(line, "reserved but unallocated memory is large")) {
    f->detail +=
        "; much memory is reserved but unallocated: try "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
  }
  return true;
}

// NCCL error in: file:line, <message>
bool RefineNcclError(const RuleMatch& m, Finding* f) {
  std::string_view msg = m.groups.back();
  f->blame = {};
  if (Contains(msg, "unhandled cuda error") || Contains(msg, "Cuda failure")) {
    ClassifyCudaMessage(msg, f);
    if (f->tier == Tier::kCause) return true;
    f->tier = Tier::kGeneric;
    f->detail = "NCCL failed on a CUDA call: the CUDA error before it is the cause";
    return true;
  }
  if (Contains(msg, "invalid usage")) {
    Decide(f, FC::kUserCode, A::kFixCode, Tier::kGeneric, 0.5,
           "NCCL was called wrongly (two ranks on one GPU, mismatched sizes)");
    return true;
  }
  if (Contains(msg, "remote process exited") || Contains(msg, "network error")) {
    f->fault = FC::kNetwork;
    f->action = A::kFixNetwork;
    f->confidence = 0.3;
    f->detail =
        "a peer rank died or the network failed: the peer's own log or the NCCL WARN "
        "lines say which";
    return true;
  }
  f->detail = "NCCL failed: the NCCL WARN lines before it name the cause";
  return true;
}

// ProcessGroupNCCL's watchdog timeout: names the collective that never completed.
bool RefineWatchdogTimeout(const RuleMatch& m, Finding* f) {
  f->ran_for_ns = CaptureInt(m.groups[2], 0) * 1'000'000;
  f->collective = fmt::format("SeqNum={} OpType={}", m.groups[0], m.groups[1]);
  f->detail = fmt::format(
      "collective {} (SeqNum {}) did not complete in {:.0f} s on this rank: a consequence of "
      "a rank that failed or never joined",
      m.groups[1], m.groups[0], static_cast<double>(f->ran_for_ns) / 1e9);
  return true;
}

// "ProcessGroupNCCL's watchdog got stuck": a CUDA/NCCL call blocked the watchdog. With one
// outstanding work item that is the communicator's first collective, where NCCL connects to its
// peers: the other ranks never arrived (started late, or not at all).
bool RefineWatchdogStuck(const RuleMatch& m, Finding* f) {
  size_t at = m.line.find("workMetaList_.size()");
  int64_t outstanding = -1;
  if (at != std::string_view::npos) {
    std::string_view rest = m.line.substr(at + 20);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '=')) rest.remove_prefix(1);
    size_t n = 0;
    while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
    outstanding = CaptureInt(rest.substr(0, n));
  }
  if (outstanding > 1) {
    Decide(f, FC::kUnknown, A::kNone, Tier::kGeneric, 0.3,
           fmt::format(
               "a CUDA or NCCL call blocked the watchdog for {} s with {} collectives outstanding: "
               "collect stacks (py-spy) and Flight Recorder dumps",
               m.groups[0], outstanding));
    return true;
  }
  f->detail = fmt::format(
      "a CUDA or NCCL call blocked for {} s with only the first collective outstanding: the "
      "communicator was waiting for ranks that had not started (nodes launched at different "
      "times); start the nodes together or raise TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
      m.groups[0]);
  return true;
}

// torchrun's summary: "traceback : Signal 9 (SIGKILL) received by PID 79468". The rank, host
// and time are the block's lines above it.
bool RefineSignalReceived(const RuleMatch& m, Finding* f) {
  std::string_view sig = m.groups[1];
  f->pid = CaptureInt(m.groups[2]);
  for (int back = 1; back <= 8; ++back) {
    std::string_view prev = m.before.Line(back);
    size_t colon = prev.find(':');
    if (colon == std::string_view::npos) continue;
    std::string key(prev.substr(0, colon));
    key.erase(std::remove(key.begin(), key.end(), ' '), key.end());
    std::string_view value = prev.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (key == "rank") {
      f->where.rank = CaptureInt(value.substr(0, value.find(' ')));
    } else if (key == "host") {
      f->where.node = std::string(value.substr(0, value.find(' ')));
    }
    if (prev.find("]:") != std::string_view::npos && prev.find('[') == 0) break;
  }
  f->blame.rank = f->blame.node = true;
  if (sig == "SIGKILL") {
    f->fault = FC::kOomHost;
    f->action = A::kReduceMemory;
    f->tier = Tier::kGeneric;
    f->confidence = 0.4;
    f->detail =
        "the worker was killed with SIGKILL: most often by the kernel's OOM killer "
        "(host memory); the node's kernel log (dmesg) confirms it";
  } else if (sig == "SIGSEGV") {
    Decide(f, FC::kCudaSoftware, A::kRestartApp, Tier::kGeneric, 0.45,
           "the worker died of a segmentation fault in native code");
  } else if (sig == "SIGBUS") {
    f->tier = Tier::kGeneric;
    f->confidence = 0.3;
    f->detail = "the worker died of SIGBUS: often a full /dev/shm (shared-memory tensors)";
  } else {
    f->tier = Tier::kSymptom;
    f->blame = {};
    f->detail = fmt::format("the worker ended with {} (sent by a watchdog or launcher)", sig);
  }
  return true;
}

// torch.distributed.elastic: "failed (exitcode: -9) local_rank: 0 (pid: 1234) of binary"
bool RefineElasticFailed(const RuleMatch& m, Finding* f) {
  int64_t code = CaptureInt(m.groups[0], 0);
  f->pid = CaptureInt(m.groups[2]);
  if (code == -9) {
    Decide(f, FC::kOomHost, A::kReduceMemory, Tier::kGeneric, 0.35,
           "a worker was killed with SIGKILL: most often the OOM killer");
  } else if (code == -11) {
    Decide(f, FC::kCudaSoftware, A::kRestartApp, Tier::kGeneric, 0.4,
           "a worker died of a segmentation fault");
  }
  return true;
}

bool IsUpperAlpha(char c) { return c >= 'A' && c <= 'Z'; }

// The last "File ..., line N, in f" above an exception line, for the detail.
std::string RaisedAt(const Lookback& before) {
  for (int back = 1; back <= 3; ++back) {
    std::string_view prev = before.Line(back);
    size_t at = prev.find("File \"");
    if (at == std::string_view::npos) continue;
    std::string_view rest = prev.substr(at + 6);
    size_t q = rest.find('"');
    if (q == std::string_view::npos) return "";
    std::string_view file = rest.substr(0, q);
    size_t slash = file.rfind('/');
    if (slash != std::string_view::npos) file = file.substr(slash + 1);
    std::string_view tail = rest.substr(q + 1);
    size_t line_at = tail.find("line ");
    std::string_view line_no =
        line_at == std::string_view::npos
            ? ""
            : tail.substr(line_at + 5, tail.find(',', line_at) - line_at - 5);
    size_t in_at = tail.find(", in ");
    std::string_view fn = in_at == std::string_view::npos ? "" : tail.substr(in_at + 5);
    return fmt::format(" (raised at {}:{} in {})", file, line_no, fn);
  }
  return "";
}

// A Python exception line: "ValueError: bad value", "[rank1]: KeyError: 'x'",
// "torch.distributed.DistStoreError: ...". The specific rules above have taken the lines they
// know; this one sorts the rest by the exception's name.
bool RefinePythonException(const RuleMatch& m, Finding* f) {
  std::string_view qualified = m.groups[1];
  std::string_view name = qualified.substr(qualified.rfind('.') + 1);
  if (name.empty() || !IsUpperAlpha(name.front()) || name.ends_with("Warning")) return false;
  std::string_view message = m.groups[2];
  if (message.starts_with(": ")) message.remove_prefix(2);
  f->blame.rank = true;
  f->tier = Tier::kCause;
  f->fault = FC::kUserCode;
  f->action = A::kFixCode;
  f->confidence = 0.75;
  const std::string at = RaisedAt(m.before);
  // A rank that raises because its peer went away (gloo's "Connection closed by peer") reports
  // another rank's failure.
  const bool peer_gone = Contains(message, "Connection closed by peer") ||
                         Contains(message, "Connection reset by peer");
  if (name == "ChildFailedError" || name == "KeyboardInterrupt" || name == "SystemExit" ||
      name == "DistBackendError" || name == "ProcessExitedException" || peer_gone) {
    f->fault = FC::kUnknown;
    f->action = A::kNone;
    f->tier = Tier::kSymptom;
    f->blame = {};
    f->detail = fmt::format("{}: the process ended because of an earlier failure", name);
    return true;
  }
  // ENOMEM in any message (OSError's "[Errno 12] Cannot allocate memory", PyTorch's CPU
  // allocator: "DefaultCPUAllocator: can't allocate memory: ... Error code 12 (Cannot allocate
  // memory)").
  if (name == "MemoryError" || Contains(message, "Cannot allocate memory") ||
      Contains(message, "can't allocate memory")) {
    f->fault = FC::kOomHost;
    f->action = A::kReduceMemory;
    f->confidence = 0.8;
    f->detail = "the process ran out of host memory" + at;
    return true;
  }
  if (Contains(message, "No space left on device") || Contains(message, "Disk quota exceeded") ||
      Contains(message, "Stale file handle") || Contains(message, "Input/output error") ||
      Contains(message, "Read-only file system")) {
    f->fault = FC::kStorage;
    f->action = A::kFixConfig;
    f->confidence = 0.75;
    f->detail = fmt::format("the file system failed: {}{}", message.substr(0, 120), at);
    return true;
  }
  if (name == "DistStoreError" || name == "DistNetworkError" || name.starts_with("Rendezvous")) {
    f->fault = FC::kRendezvous;
    f->action = A::kFixConfig;
    f->tier = Tier::kGeneric;
    f->confidence = 0.5;
    f->blame = {};
    f->detail =
        "the ranks could not meet at the rendezvous store (MASTER_ADDR/PORT, a rank "
        "that never started, or one that died)" +
        at;
    return true;
  }
  if (name == "ModuleNotFoundError" || name == "ImportError" || name == "FileNotFoundError" ||
      name == "PermissionError") {
    f->action = A::kFixConfig;
    f->confidence = 0.7;
    f->detail = fmt::format("{}: the job's environment or paths are wrong{}", name, at);
    return true;
  }
  f->detail = fmt::format(
      "{} in the training code{}: fix the code or its input; a restart "
      "repeats it",
      name, at);
  if (name == "RuntimeError") f->confidence = 0.55;
  return true;
}

bool RefineRendezvousConnect(const RuleMatch& m, Finding* f) {
  f->detail = fmt::format(
      "a rank could not reach the rendezvous store at {}:{} ({}): check MASTER_ADDR and "
      "MASTER_PORT, and that rank 0's node is up and reachable",
      m.groups[0], m.groups[1], m.groups[3]);
  return true;
}

constexpr LineRule kTorchRules[] = {
    {"cuda_oom", Family::kWorker, RuleRole::kFinding,
     R"(CUDA out of memory\. Tried to allocate|OutOfMemoryError: CUDA out of memory)", Tier::kCause,
     FC::kOomGpu, A::kReduceMemory, 0.9, kBlameRank, "", RefineCudaOom},
    {"device_assert", Family::kWorker, RuleRole::kFinding,
     R"(block: \[[0-9]+,[0-9]+,[0-9]+\], thread: \[[0-9]+,[0-9]+,[0-9]+\] Assertion `.*` failed)",
     Tier::kCause, FC::kUserCode, A::kFixCode, 0.8, kBlameRank,
     "a device-side assertion failed in a CUDA kernel: an index out of range (labels, token ids "
     "or positions beyond the embedding size); fix the data or the model's sizes; a restart "
     "repeats it"},
    {"cuda_error", Family::kWorker, RuleRole::kFinding,
     R"((CUDA error|CUDA_ERROR_[A-Z_]+|cudaError[A-Za-z]+)[:,]? (.*))", Tier::kCause,
     FC::kCudaSoftware, A::kRestartApp, 0.7, kBlameRank, "", RefineCudaError},
    {"cublas_error", Family::kWorker, RuleRole::kFinding,
     R"((CUBLAS_STATUS_[A-Z_]+|CUDNN_STATUS_[A-Z_]+))", Tier::kGeneric, FC::kCudaSoftware,
     A::kRestartApp, 0.5, kBlameRank, "",
     [](const RuleMatch& m, Finding* f) {
       ClassifyCudaMessage(
           m.groups[0] == "CUBLAS_STATUS_ALLOC_FAILED" ? "out of memory" : m.groups[0], f);
       if (m.groups[0] != "CUBLAS_STATUS_ALLOC_FAILED") f->tier = Tier::kGeneric;
       return true;
     }},
    {"collective_mismatch",
     Family::kWorker,
     RuleRole::kFinding,
     R"(Detected mismatch between collectives on ranks)",
     Tier::kCause,
     FC::kHangCollectiveMismatch,
     A::kFixCode,
     0.85,
     {},
     "ranks issued different collectives (op, shapes or dtypes) at the same sequence number: "
     "some rank took another code path (data-dependent branches, unused parameters); fix the "
     "code"},
    {"watchdog_timeout",
     Family::kWorker,
     RuleRole::kFinding,
     R"(Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=([0-9]+), OpType=([A-Z_]+).*\) ran for ([0-9]+) milliseconds)",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.3,
     {},
     "",
     RefineWatchdogTimeout},
    {"watchdog_exception",
     Family::kWorker,
     RuleRole::kFinding,
     R"((detected by watchdog at work|Timeout at NCCL work): ([0-9]+), last enqueued NCCL work: ([0-9]+), last completed NCCL work: ([0-9]+))",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.3,
     {},
     "the watchdog's view of the stuck collective: sequence numbers enqueued and completed"},
    {"watchdog_stuck",
     Family::kWorker,
     RuleRole::kFinding,
     R"(watchdog got stuck for ([0-9]+) seconds without making progress)",
     Tier::kCause,
     FC::kRendezvous,
     A::kFixConfig,
     0.5,
     {},
     "",
     RefineWatchdogStuck},
    {"heartbeat_timeout",
     Family::kWorker,
     RuleRole::kFinding,
     R"(Heartbeat monitor timed out|ProcessGroupNCCL preparing to dump debug info|Some NCCL operations have failed or timed out|To avoid data inconsistency, we are taking the entire process down|NCCL communicator was aborted)",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.2,
     {},
     "ProcessGroupNCCL ending the process after a failure or hang"},
    {"nccl_error",
     Family::kWorker,
     RuleRole::kFinding,
     R"(NCCL error in:? ([^,]*), (.*))",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.3,
     {},
     "",
     RefineNcclError},
    {"nccl_result",
     Family::kWorker,
     RuleRole::kFinding,
     R"((ncclRemoteError|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclInvalidUsage|ncclInvalidArgument): (.*))",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.3,
     {},
     "",
     [](const RuleMatch& m, Finding* f) {
       std::string_view code = m.groups[0];
       if (code == "ncclRemoteError") {
         f->fault = FC::kNetwork;
         f->action = A::kFixNetwork;
         f->detail = "a peer died or the network failed; the error below it says which";
       } else if (code == "ncclInvalidUsage" || code == "ncclInvalidArgument") {
         f->fault = FC::kUserCode;
         f->action = A::kFixCode;
         f->tier = Tier::kGeneric;
         f->detail = "NCCL was called wrongly";
       } else if (code == "ncclUnhandledCudaError") {
         f->fault = FC::kCudaSoftware;
         f->action = A::kRestartApp;
         f->detail = "a CUDA call inside NCCL failed";
       } else {
         f->detail = "NCCL failed; its WARN lines name the cause";
       }
       return true;
     }},
    {"gloo_peer_closed",
     Family::kWorker,
     RuleRole::kFinding,
     // gloo's TCP pair reports its socket to a peer failing in these words (gloo/transport/tcp/
     // pair.cc): closed, reset (a read error), broken (writev: Broken pipe), or silent too long.
     R"(Connection closed by peer \[([^]]*)\]:([0-9]+)|gloo/transport/tcp/pair\.cc:[0-9]+\] )"
     R"((Read error|writev|Socket closed|Socket unexpectedly closed|Read timeout|Write timeout) )",
     Tier::kSymptom,
     FC::kNetwork,
     A::kFixNetwork,
     0.3,
     {},
     "a peer rank's connection failed: the peer died (its own log or exit says why) or the "
     "network dropped it"},
    {"gloo_timeout",
     Family::kWorker,
     RuleRole::kFinding,
     R"(Timed out waiting ([0-9]+)ms for (recv|send) operation to complete)",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.3,
     {},
     "a gloo collective waited for a peer that never sent: a consequence of a rank that "
     "failed or never joined",
     [](const RuleMatch& m, Finding* f) {
       f->ran_for_ns = CaptureInt(m.groups[0], 0) * 1'000'000;
       return true;
     }},
    {"c10d_connect_failed",
     Family::kWorker,
     RuleRole::kFinding,
     R"(The client socket has failed to connect to \[([^]]*)\]:([0-9]+) \(errno: ([0-9]+) - ([^)]*)\))",
     Tier::kCause,
     FC::kRendezvous,
     A::kFixConfig,
     0.75,
     {},
     "",
     RefineRendezvousConnect},
    {"c10d_listen_failed",
     Family::kWorker,
     RuleRole::kFinding,
     R"(The server socket has failed to (listen|bind)|EADDRINUSE|[Aa]ddress already in use)",
     Tier::kCause,
     FC::kRendezvous,
     A::kFixConfig,
     0.7,
     {},
     "the rendezvous port is taken (another job or a leftover process on MASTER_PORT): pick "
     "another port or clean up the node"},
    {"store_timeout",
     Family::kWorker,
     RuleRole::kFinding,
     R"(Timed out after ([0-9]+) seconds waiting for clients\. ([0-9]+)/([0-9]+) clients joined)",
     Tier::kCause,
     FC::kRendezvous,
     A::kFixConfig,
     0.75,
     {},
     "not every rank reached the rendezvous store: some node did not start the job, or "
     "cannot reach MASTER_ADDR"},
    {"torchrun_signal", Family::kWorker, RuleRole::kFinding,
     R"(traceback *: (Signal ([0-9]+) \(([A-Z]+)\) received by PID ([0-9]+)))", Tier::kGeneric,
     FC::kUnknown, A::kNone, 0.4, kBlameRankNode, "",
     [](const RuleMatch& m, Finding* f) {
       std::string_view groups[3] = {m.groups[1], m.groups[2], m.groups[3]};
       RuleMatch shifted{m.line, groups, m.before};
       return RefineSignalReceived(shifted, f);
     }},
    {"torchrun_failed",
     Family::kWorker,
     RuleRole::kFinding,
     R"(^[^ ]+\.py FAILED$)",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.2,
     {},
     "torchrun's summary: a worker of this script failed"},
    {"elastic_failed",
     Family::kWorker,
     RuleRole::kFinding,
     R"(failed \(exitcode: (-?[0-9]+)\) local_rank: ([0-9]+) \(pid: ([0-9]+)\))",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.3,
     {},
     "torch.distributed.elastic saw a worker fail",
     RefineElasticFailed},
    {"launcher_kill",
     Family::kWorker,
     RuleRole::kFinding,
     R"((Killing subprocess|Sending process) ([0-9]+))",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.2,
     {},
     "the launcher stopping the other workers after one failed",
     [](const RuleMatch& m, Finding* f) {
       f->pid = CaptureInt(m.groups[1]);
       return true;
     }},
    {"store_barrier_timeout",
     Family::kWorker,
     RuleRole::kFinding,
     R"(Timed out initializing process group in store based barrier)",
     Tier::kCause,
     FC::kRendezvous,
     A::kFixConfig,
     0.7,
     {},
     "not every rank reached the process group's store barrier in time: a rank never started, "
     "started late, or cannot reach MASTER_ADDR"},
    {"unique_id_via_store",
     Family::kWorker,
     RuleRole::kFinding,
     R"(retrieving ncclUniqueId from \[([0-9]+)\] via c10d key-value store)",
     Tier::kGeneric,
     FC::kRendezvous,
     A::kFixConfig,
     0.45,
     {},
     "a rank could not get the NCCL id from the store: the rank that creates it died or never "
     "got there"},
    {"socket_timeout",
     Family::kWorker,
     RuleRole::kFinding,
     R"(RuntimeError: Socket Timeout)",
     Tier::kGeneric,
     FC::kRendezvous,
     A::kFixConfig,
     0.45,
     {},
     "a rank timed out talking to the rendezvous store"},
    {"launcher_exit_code",
     Family::kWorker,
     RuleRole::kFinding,
     R"(exits with return code = (-?[0-9]+))",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.3,
     {},
     "the launcher saw a worker exit",
     [](const RuleMatch& m, Finding* f) {
       std::string_view groups[3] = {m.groups[0], "", ""};
       RuleMatch g{m.line, groups, m.before};
       return RefineElasticFailed(g, f);
     }},
    {"native_crash", Family::kWorker, RuleRole::kFinding,
     R"(Fatal Python error: (Segmentation fault|Bus error|Aborted)|Segmentation fault \(core dumped\))",
     Tier::kGeneric, FC::kCudaSoftware, A::kRestartApp, 0.5, kBlameRank,
     "the process crashed in native code (the framework, an extension, or the driver); restart, "
     "and if it repeats at the same step, report it with the stack above"},
    {"shell_killed", Family::kWorker, RuleRole::kFinding, R"(: line [0-9]+: +[0-9]+ Killed +)",
     Tier::kGeneric, FC::kOomHost, A::kReduceMemory, 0.4, kBlameNode,
     "the shell reports the process Killed (SIGKILL): most often the kernel's OOM killer"},
    {"terminate_called",
     Family::kWorker,
     RuleRole::kFinding,
     R"(terminate called after throwing an instance of)",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.2,
     {},
     "a C++ exception ended the process: the error before it says why"},
    {"dataloader_killed", Family::kWorker, RuleRole::kFinding,
     R"(DataLoader worker \(pid\(?s?\)? ?([0-9]+)[^)]*\) (is killed by signal|exited unexpectedly))",
     Tier::kCause, FC::kOomHost, A::kReduceMemory, 0.6, kBlameRankNode,
     "a DataLoader worker process was killed: usually host memory (fewer workers, smaller "
     "prefetch) or a full /dev/shm"},
    {"shm_bus_error", Family::kWorker, RuleRole::kFinding, R"(insufficient shared memory \(shm\))",
     Tier::kCause, FC::kNcclConfig, A::kFixConfig, 0.75, kBlameRankNode,
     "/dev/shm is too small for the DataLoader's shared tensors: give the container more "
     "(--shm-size) or use fewer workers"},
    {"no_space", Family::kWorker, RuleRole::kFinding,
     R"(No space left on device|Disk quota exceeded|Stale file handle)", Tier::kCause, FC::kStorage,
     A::kFixConfig, 0.75, kBlameRankNode,
     "a file system is full or gone (checkpoints, caches, /tmp): free space or fix the mount",
     [](const RuleMatch& m, Finding* f) {
       if (Contains(m.line, "/dev/shm") || Contains(m.line, "</torch_")) {
         f->fault = FC::kNcclConfig;
         f->detail =
             "/dev/shm is full: shared-memory tensors (DataLoader workers) need a larger "
             "/dev/shm in the container (--shm-size) or fewer workers";
       }
       return true;
     }},
    {"python_exception", Family::kWorker, RuleRole::kFinding,
     R"(^(\[[A-Za-z]+ *[0-9]+\]: ?|[0-9]+: )?(([A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*(Error|Exception|Interrupt|Exit))(: .*)?$)",
     Tier::kCause, FC::kUserCode, A::kFixCode, 0.75, kBlameRank, "",
     [](const RuleMatch& m, Finding* f) {
       std::string_view groups[3] = {m.groups[0], m.groups[1], m.groups[4]};
       RuleMatch shifted{m.line, groups, m.before};
       return RefinePythonException(shifted, f);
     }},
};

}  // namespace

std::span<const LineRule> TorchRules() { return kTorchRules; }

}  // namespace titan::diagnose
