// The scheduler's lines: Slurm (srun, slurmstepd, sacct, scontrol) and Kubernetes as kubectl
// prints it (get pods, describe, get events), plus nvidia-smi as a shell shows it.
#include <fmt/format.h>

#include "src/diagnose/rules/line_rule.h"

namespace titan::diagnose {
namespace {

using FC = FaultClass;
using A = Action;

// A Slurm job or step state (sacct's State, scontrol's JobState) as a finding.
bool ClassifySlurmState(std::string_view state, Finding* f) {
  f->tier = Tier::kCause;
  if (state.starts_with("OUT_OF_ME")) {
    f->fault = FC::kOomHost;
    f->action = A::kReduceMemory;
    f->confidence = 0.8;
    f->detail =
        "Slurm ended the job for exceeding its memory: reduce host memory use or ask "
        "for more (--mem)";
  } else if (state.starts_with("NODE_FAIL")) {
    f->fault = FC::kScheduler;
    f->action = A::kDrainNode;
    f->confidence = 0.7;
    f->detail = "a node of the job failed (Slurm's NODE_FAIL): drain it and restart elsewhere";
  } else if (state.starts_with("TIMEOUT")) {
    f->fault = FC::kScheduler;
    f->action = A::kFixConfig;
    f->confidence = 0.8;
    f->detail = "the job hit its time limit: raise --time or checkpoint and requeue";
  } else if (state.starts_with("PREEMPTED")) {
    f->fault = FC::kScheduler;
    f->action = A::kNone;
    f->confidence = 0.7;
    f->detail = "Slurm preempted the job for another";
  } else if (state.starts_with("CANCELLED")) {
    Decide(f, FC::kScheduler, A::kNone, Tier::kGeneric, 0.5,
           "the job was cancelled (scancel, or by Slurm)");
  } else if (state.starts_with("FAILED") || state.starts_with("BOOT_FAIL")) {
    f->tier = Tier::kSymptom;
    f->confidence = 0.2;
    f->detail = "a job step failed (non-zero exit): the step's own output says why";
  } else {
    return false;
  }
  return true;
}

// slurmstepd: error: *** JOB 123 ON node1 CANCELLED AT 2024-... DUE TO TIME LIMIT ***
bool RefineSlurmCancelled(const RuleMatch& m, Finding* f) {
  std::string_view reason = m.groups[3];
  f->where.node = std::string(m.groups[1]);
  if (Contains(reason, "TIME LIMIT")) return ClassifySlurmState("TIMEOUT", f);
  if (Contains(reason, "NODE FAIL")) {
    f->blame.node = true;
    return ClassifySlurmState("NODE_FAIL", f);
  }
  if (Contains(reason, "PREEMPTION")) return ClassifySlurmState("PREEMPTED", f);
  return ClassifySlurmState("CANCELLED", f);
}

// sacct: "123.0  python  gpu  acct  8  OUT_OF_ME+  0:125"
bool RefineSacct(const RuleMatch& m, Finding* f) { return ClassifySlurmState(m.groups[2], f); }

// Lines of `kubectl get pods`: NAME READY STATUS RESTARTS AGE.
bool RefinePodRow(const RuleMatch& m, Finding* f) {
  std::string_view status = m.groups[1];
  if (status == "OOMKilled") {
    Decide(f, FC::kOomHost, A::kReduceMemory, Tier::kCause, 0.8,
           "a container was killed for exceeding its memory limit (OOMKilled)");
  } else {
    f->detail = fmt::format("a pod is {}: its events say why", status);
  }
  return true;
}

bool RefineFailedScheduling(const RuleMatch& m, Finding* f) {
  std::string_view line = m.line;
  if (Contains(line, "Insufficient")) {
    f->action = A::kNone;
    f->detail =
        "no node has the resources the pod asks for (every GPU is taken): wait for "
        "capacity, or free what leftover pods hold";
  } else {
    f->action = A::kFixConfig;
    f->detail = "no node matches the pod's constraints (taints, selectors, affinity)";
  }
  return true;
}

bool RefineSrunTask(const RuleMatch& m, Finding* f) {
  f->where.node = std::string(m.groups[0]);
  return true;
}

bool RefineDeviceHandle(const RuleMatch& m, Finding* f) {
  f->where.gpu = NormalizePci(m.groups[0]);
  if (!Contains(m.groups[1], "Unknown Error") && !Contains(m.groups[1], "GPU is lost")) {
    f->tier = Tier::kSymptom;
    f->action = A::kNone;
  }
  return true;
}

constexpr LineRule kClusterRules[] = {
    // Slurm
    {"slurm_execve",
     Family::kSlurm,
     RuleRole::kFinding,
     R"(slurmstepd: error: execve\(\): ([^:]+): (.*))",
     Tier::kCause,
     FC::kScheduler,
     A::kFixConfig,
     0.85,
     {},
     "Slurm could not start the job's command on the node (not installed there, or not on "
     "PATH in the job's environment/modules)"},
    {"slurm_cancelled",
     Family::kSlurm,
     RuleRole::kFinding,
     R"(\*\*\* (JOB|STEP) ([0-9.]+) ON ([^ ]+) CANCELLED AT ([^ ]+)( DUE TO ([A-Z ]+))?)",
     Tier::kCause,
     FC::kScheduler,
     A::kNone,
     0.6,
     {},
     "",
     [](const RuleMatch& m, Finding* f) {
       std::string_view groups[4] = {m.groups[0], m.groups[2], m.groups[3], m.groups[5]};
       RuleMatch g{m.line, groups, m.before};
       return RefineSlurmCancelled(g, f);
     }},
    {"slurm_oom", Family::kSlurm, RuleRole::kFinding, R"(Detected ([0-9]+) oom[-_]kill event)",
     Tier::kCause, FC::kOomHost, A::kReduceMemory, 0.85, kBlameNode,
     "Slurm's cgroup saw the OOM killer kill a process of the step: host memory ran out (raise "
     "--mem or reduce host memory use)"},
    {"srun_node_failure", Family::kSlurm, RuleRole::kFinding,
     R"(srun: error: Node failure on ([^ ]+))", Tier::kCause, FC::kScheduler, A::kDrainNode, 0.7,
     kBlameNode, "Slurm lost a node of the step: drain it and restart without it", RefineSrunTask},
    {"srun_task_exit", Family::kSlurm, RuleRole::kFinding,
     R"(srun: error: ([^: ]+): tasks? [0-9,-]+: (Exited with exit code [0-9]+|Killed|Terminated|Segmentation fault|Aborted|Out Of Memory))",
     Tier::kSymptom, FC::kUnknown, A::kNone, 0.3, kBlameNode,
     "srun: a task of the step ended with an error on this node",
     [](const RuleMatch& m, Finding* f) {
       f->where.node = std::string(m.groups[0]);
       if (m.groups[1] == "Out Of Memory") {
         f->tier = Tier::kCause;
         f->fault = FC::kOomHost;
         f->action = A::kReduceMemory;
         f->confidence = 0.8;
         f->detail =
             "Slurm killed a task for exceeding its memory: reduce host memory use or "
             "ask for more (--mem)";
       }
       return true;
     }},
    {"srun_unable",
     Family::kSlurm,
     RuleRole::kFinding,
     R"((srun|sbatch|salloc): error: (Unable to allocate|Unable to create step|Batch job submission failed|Invalid )(.*))",
     Tier::kCause,
     FC::kScheduler,
     A::kFixConfig,
     0.7,
     {},
     "Slurm refused the job or step: the request does not fit the partition or the account"},
    {"srun_step_end",
     Family::kSlurm,
     RuleRole::kFinding,
     R"(srun: (launch/slurm: _step_signal: Terminating StepId|Job step aborted|forcing job termination|error: Timed out waiting for job step))",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.2,
     {},
     "srun ending the step after a task failed"},
    {"sacct_state",
     Family::kSlurm,
     RuleRole::kFinding,
     R"(^[0-9]+(_[0-9]+)?(\.[a-z0-9+]+)? .* (OUT_OF_ME[A-Z+]*|NODE_FAIL|TIMEOUT|PREEMPTED|CANCELLED[A-Za-z0-9+ ]*|FAILED|BOOT_FAIL) +[0-9]+:[0-9]+ *$)",
     Tier::kCause,
     FC::kScheduler,
     A::kNone,
     0.5,
     {},
     "",
     RefineSacct},
    {"scontrol_job_state",
     Family::kSlurm,
     RuleRole::kFinding,
     R"(JobState=(OUT_OF_MEMORY|NODE_FAIL|TIMEOUT|PREEMPTED|CANCELLED|FAILED|BOOT_FAIL) )",
     Tier::kCause,
     FC::kScheduler,
     A::kNone,
     0.5,
     {},
     "",
     [](const RuleMatch& m, Finding* f) { return ClassifySlurmState(m.groups[0], f); }},
    {"scontrol_node_down", Family::kSlurm, RuleRole::kFinding,
     R"(State=(DOWN|DRAIN|DRAINED|DRAINING|FAIL|FAILING)[A-Z+*]* .*)", Tier::kGeneric,
     FC::kScheduler, A::kDrainNode, 0.5, kBlameNode,
     "Slurm has the node down or drained; its Reason= says why",
     [](const RuleMatch& m, Finding* f) {
       for (int back = 1; back <= 3; ++back) {
         std::string_view prev = m.before.Line(back);
         size_t at = prev.find("NodeName=");
         if (at == std::string_view::npos) continue;
         std::string_view rest = prev.substr(at + 9);
         f->where.node = std::string(rest.substr(0, rest.find(' ')));
         break;
       }
       return true;
     }},
    // Kubernetes, as kubectl prints it
    {"k8s_low_on_memory",
     Family::kKubernetes,
     RuleRole::kFinding,
     R"(The node was low on resource: (memory|ephemeral-storage))",
     Tier::kCause,
     FC::kOomHost,
     A::kReduceMemory,
     0.8,
     {},
     "",
     [](const RuleMatch& m, Finding* f) {
       if (m.groups[0] == "memory") {
         f->detail =
             "the kubelet evicted the pod: the node ran low on host memory; lower the "
             "job's memory use or set requests/limits so it is scheduled where it fits";
       } else {
         f->fault = FC::kStorage;
         f->action = A::kFixConfig;
         f->detail = "the kubelet evicted the pod: the node ran out of ephemeral storage";
       }
       return true;
     }},
    {"k8s_oom_killed",
     Family::kKubernetes,
     RuleRole::kFinding,
     R"(OOMKill(ed|ing)|Memory cgroup out of memory)",
     Tier::kCause,
     FC::kOomHost,
     A::kReduceMemory,
     0.8,
     {},
     "the container exceeded its memory limit and was OOM-killed: raise the limit or reduce "
     "host memory use"},
    {"k8s_failed_scheduling",
     Family::kKubernetes,
     RuleRole::kFinding,
     R"(FailedScheduling .*(nodes are available|Insufficient|didn't match|untolerated taint))",
     Tier::kCause,
     FC::kScheduler,
     A::kNone,
     0.75,
     {},
     "",
     RefineFailedScheduling},
    {"k8s_failed_mount",
     Family::kKubernetes,
     RuleRole::kFinding,
     R"((FailedMount|FailedAttachVolume|MountVolume\.SetUp failed))",
     Tier::kCause,
     FC::kStorage,
     A::kFixConfig,
     0.7,
     {},
     "a volume could not be mounted into the pod (PVC, secret or NFS server)"},
    {"k8s_image_pull",
     Family::kKubernetes,
     RuleRole::kFinding,
     R"((ErrImagePull|ImagePullBackOff|Failed to pull image))",
     Tier::kCause,
     FC::kScheduler,
     A::kFixConfig,
     0.7,
     {},
     "the container image cannot be pulled (name, tag or credentials)"},
    {"k8s_node_not_ready", Family::kKubernetes, RuleRole::kFinding,
     R"((NodeNotReady|status is now: NodeNotReady))", Tier::kGeneric, FC::kScheduler, A::kDrainNode,
     0.5, kBlameNode, "a node stopped reporting ready to Kubernetes"},
    {"k8s_killing",
     Family::kKubernetes,
     RuleRole::kFinding,
     R"((Killing container with id|Stopping container|Back-off restarting failed container))",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.2,
     {},
     "Kubernetes stopping or restarting a container"},
    {"k8s_pod_row",
     Family::kKubernetes,
     RuleRole::kFinding,
     R"(^([a-z0-9][a-z0-9.-]*) +[0-9]+/[0-9]+ +(Pending|CrashLoopBackOff|Error|OOMKilled|Evicted|ContainerCreating|ImagePullBackOff|ErrImagePull|Unknown) +[0-9]+)",
     Tier::kSymptom,
     FC::kUnknown,
     A::kNone,
     0.2,
     {},
     "",
     RefinePodRow},
    // nvidia-smi as a shell shows it
    {"nvsmi_device_handle", Family::kShell, RuleRole::kFinding,
     R"(Unable to determine the device handle for GPU ?([0-9A-Fa-f:.]+): (.*))", Tier::kGeneric,
     FC::kGpuHardware, A::kDrainNode, 0.6, kBlameGpuNode,
     "nvidia-smi cannot reach the GPU: it is lost to the driver (fallen off the bus or hung); "
     "the node needs a reboot and a hardware check",
     RefineDeviceHandle},
    {"nvsmi_gpu_lost", Family::kShell, RuleRole::kFinding, R"(GPU is lost\.|No devices were found)",
     Tier::kGeneric, FC::kGpuHardware, A::kDrainNode, 0.5, kBlameNode,
     "nvidia-smi finds no (or a lost) GPU: the driver lost it"},
};

}  // namespace

std::span<const LineRule> ClusterRules() { return kClusterRules; }

}  // namespace titan::diagnose
