// Every line rule reads a line of its kind, and its pattern is in the subset that Hyperscan, RE2
// and POSIX ERE (grep -E) all read the same.
#include <regex.h>

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "src/diagnose/line_matcher.h"
#include "src/diagnose/rules/line_rule.h"
#include "src/diagnose/sources/source.h"

namespace titan::diagnose {
namespace {

struct Example {
  const char* rule;
  const char* line;
  FaultClass fault;
};

// One line per finding rule, in the formats the tools write.
const Example kExamples[] = {
    {"xid",
     "[Mon May  6 10:00:01 2024] NVRM: Xid (PCI:0000:3b:00): 48, pid=4242, name=python, DBE "
     "(0x1,0x2)",
     FaultClass::kGpuMemoryEcc},
    {"gpu_fell_off_bus", "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.",
     FaultClass::kGpuHardware},
    {"gpu_fell_off_bus_multiline", "NVRM: installed in this system has fallen off the bus and is",
     FaultClass::kGpuHardware},
    {"gsp_rate_limit",
     "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:18:00 (printing 1 of every 30).",
     FaultClass::kGpuHardware},
    {"rm_init_failed", "NVRM: GPU 0000:1a:00.0: RmInitAdapter failed! (0x62:0x40:2468)",
     FaultClass::kGpuHardware},
    {"pcie_aer",
     "pcieport 0000:80:01.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction "
     "Layer, (Requester ID)",
     FaultClass::kGpuHardware},
    {"pcie_aer_follow_up", "pcieport 0000:80:01.0: AER: device recovery failed",
     FaultClass::kGpuHardware},
    {"oom_kill",
     "[12345.678901] Memory cgroup out of memory: Killed process 777 (python3) total-vm:1kB",
     FaultClass::kOomHost},
    {"oom_killer_invoked",
     "[12345.6] python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0",
     FaultClass::kOomHost},
    {"oom_kill_constraint",
     "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/"
     ",mems_allowed=0,task=python3,pid=777,uid=0",
     FaultClass::kOomHost},
    {"oom_reaper", "oom_reaper: reaped process 777 (python3), now anon-rss:0kB",
     FaultClass::kOomHost},
    {"segfault",
     "python3[9999]: segfault at 0 ip 00007f0000000000 sp 00007ffd00000000 error 4 in libc.so.6",
     FaultClass::kCudaSoftware},
    {"general_protection",
     "traps: python3[9999] general protection fault ip:7f0 sp:7ff error:0 in libtorch.so",
     FaultClass::kCudaSoftware},
    {"peermem_error",
     "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping",
     FaultClass::kUnknown},
    {"nvswitch_sxid",
     "nvidia-nvswitch2: SXid (PCI:0000:86:00.0): 24007, Fatal, Link 30 sourcetrack timeout error",
     FaultClass::kNvlink},
    {"hung_task", "INFO: task python3:4321 blocked for more than 120 seconds.",
     FaultClass::kStorage},
    {"nfs_not_responding", "nfs: server filer01 not responding, still trying",
     FaultClass::kStorage},
    {"lustre_error",
     "LustreError: 11-0: scratch-OST0004-osc: operation ost_write to node 10.0.0.9@o2ib failed: rc "
     "= -107",
     FaultClass::kStorage},
    {"block_io_error", "blk_update_request: I/O error, dev nvme0n1, sector 12345 op 0x1:(WRITE)",
     FaultClass::kStorage},
    {"ib_completion",
     "gpu7:1234:1300 [2] NCCL WARN NET/IB : Got completion from peer 10.1.2.3<40000> with "
     "status=12 opcode=0 len=0 vendor err 129 (Recv)",
     FaultClass::kNetwork},
    {"ib_async_event", "gpu7:1234:1300 [2] NCCL WARN NET/IB : Got async event : port error",
     FaultClass::kNetwork},
    {"ibv_call_failed",
     "gpu7:1234:1300 [2] NCCL WARN Call to ibv_create_qp failed with error Cannot allocate memory",
     FaultClass::kNcclConfig},
    {"shm_open_failed",
     "gpu7:1234:1300 [0] NCCL WARN Call to shm_open failed : No such file or directory",
     FaultClass::kNcclConfig},
    {"shm_extend_failed",
     "gpu7:1234:1300 [0] misc/shmutils.cc:71 NCCL WARN Error: failed to extend /dev/shm/nccl-abc "
     "to 9637892 bytes",
     FaultClass::kNcclConfig},
    {"shm_segment_failed",
     "gpu7:1234:1300 [0] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-abc "
     "(size 9637888)",
     FaultClass::kNcclConfig},
    {"nccl_cuda_failure",
     "gpu7:1234:1300 [0] NCCL WARN Cuda failure 'peer access is not supported between these two "
     "devices'",
     FaultClass::kNcclConfig},
    {"duplicate_gpu",
     "gpu7:1234:1300 [0] init.cc:521 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on "
     "CUDA device 1000",
     FaultClass::kUserCode},
    {"socket_call_failed",
     "gpu7:1234:1300 [0] NCCL WARN Net : Call to recv from 10.1.2.3<1234> failed : Connection "
     "timed out",
     FaultClass::kNetwork},
    {"socket_connect_failed",
     "gpu7:1234:1300 [0] NCCL WARN socketStartConnect: Connect to 10.1.2.3<1234> failed : No route "
     "to host",
     FaultClass::kNetwork},
    {"socket_peer_closed",
     "gpu7:1234:1300 [0] NCCL WARN Net : Connection closed by remote peer 10.1.2.3<1234>",
     FaultClass::kNetwork},
    {"socket_connect_retries",
     "gpu7:1234:1300 [0] NCCL WARN socketPollConnect: connect returned Connection refused, "
     "exceeded error retry count (35)",
     FaultClass::kNetwork},
    {"no_socket_interface", "gpu7:1234:1234 [0] NCCL WARN Bootstrap : no socket interface found",
     FaultClass::kNcclConfig},
    {"proxy_failed",
     "gpu7:1234:1300 [0] NCCL WARN [Proxy Service 3] Failed to execute operation Connect from rank "
     "3, retcode 3",
     FaultClass::kUnknown},
    {"nccl_return_trace", "gpu7:1234:1300 [0] NCCL INFO transport/net.cc:1008 -> 6",
     FaultClass::kUnknown},
    {"nccl_warn", "gpu7:1234:1300 [0] NCCL WARN Attempt to use an unsupported setting",
     FaultClass::kUnknown},
    {"slurm_execve", "slurmstepd: error: execve(): python3: No such file or directory",
     FaultClass::kScheduler},
    {"slurm_cancelled",
     "slurmstepd: error: *** JOB 4242 ON gpu01 CANCELLED AT 2024-05-06T10:00:00 DUE TO TIME LIMIT "
     "***",
     FaultClass::kScheduler},
    {"slurm_oom",
     "slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of the step tasks have "
     "been OOM Killed.",
     FaultClass::kOomHost},
    {"srun_node_failure", "srun: error: Node failure on gpu02", FaultClass::kScheduler},
    {"srun_task_exit", "srun: error: gpu03: task 5: Out Of Memory", FaultClass::kOomHost},
    {"srun_unable",
     "srun: error: Unable to create step for job 4242: More processors requested than permitted",
     FaultClass::kScheduler},
    {"srun_step_end", "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
     FaultClass::kUnknown},
    {"sacct_state", "4242.0       python   gpu      acct          8 OUT_OF_ME+    0:125",
     FaultClass::kOomHost},
    {"scontrol_job_state", "   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)",
     FaultClass::kScheduler},
    {"scontrol_node_down", "   State=DOWN+DRAIN ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A",
     FaultClass::kScheduler},
    {"k8s_low_on_memory",
     "  Warning  Evicted  3m  kubelet  The node was low on resource: memory. Container x was using "
     "60Gi.",
     FaultClass::kOomHost},
    {"k8s_oom_killed", "      Reason:       OOMKilled", FaultClass::kOomHost},
    {"k8s_failed_scheduling",
     "  Warning  FailedScheduling  10s  default-scheduler  0/4 nodes are available: 4 node(s) had "
     "untolerated taint {gpu: broken}.",
     FaultClass::kScheduler},
    {"k8s_failed_mount",
     "  Warning  FailedMount  1m  kubelet  MountVolume.SetUp failed for volume \"data\" : nfs "
     "mount failed",
     FaultClass::kStorage},
    {"k8s_image_pull",
     "  Warning  Failed  2m  kubelet  Failed to pull image \"trainer:v9\": not found",
     FaultClass::kScheduler},
    {"k8s_node_not_ready",
     "  Normal   NodeNotReady  5m  node-controller  Node gpu-node-7 status is now: NodeNotReady",
     FaultClass::kScheduler},
    {"k8s_killing", "  Normal   Killing  1m  kubelet  Stopping container trainer",
     FaultClass::kUnknown},
    {"k8s_pod_row", "trainer-worker-3   0/1     CrashLoopBackOff   7          12m",
     FaultClass::kUnknown},
    {"nvsmi_device_handle",
     "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error",
     FaultClass::kGpuHardware},
    {"nvsmi_gpu_lost", "No devices were found", FaultClass::kGpuHardware},
    {"cuda_oom",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
     "capacity of 79.10 GiB of which 1.2 GiB is free.",
     FaultClass::kOomGpu},
    {"device_assert",
     "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [12,0,0], thread: "
     "[64,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` "
     "failed.",
     FaultClass::kUserCode},
    {"cuda_error", "RuntimeError: CUDA error: an illegal memory access was encountered",
     FaultClass::kCudaSoftware},
    {"cublas_error",
     "RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa)`",
     FaultClass::kCudaSoftware},
    {"collective_mismatch",
     "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
     "CollectiveFingerPrint(SequenceNumber=12, OpType=BROADCAST)",
     FaultClass::kHangCollectiveMismatch},
    {"watchdog_timeout",
     "[rank2]:[E ProcessGroupNCCL.cpp:563] [Rank 2] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=77, OpType=BROADCAST, NumelIn=10, NumelOut=10, Timeout(ms)=1800000) ran for "
     "1800034 milliseconds before timing out.",
     FaultClass::kUnknown},
    {"watchdog_exception",
     "[rank2]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 2] Timeout at NCCL work: 77, last enqueued "
     "NCCL work: 77, last completed NCCL work: 76.",
     FaultClass::kUnknown},
    {"watchdog_stuck",
     "[rank9]:[F ProcessGroupNCCL.cpp:1224] [PG 0 Rank 9] ProcessGroupNCCL's watchdog got stuck "
     "for 480 seconds without making progress in monitoring enqueued collectives. "
     "workMetaList_.size() = 1",
     FaultClass::kRendezvous},
    {"heartbeat_timeout",
     "[rank9]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 9] Heartbeat monitor timed out! Process "
     "will be terminated after dumping debug info. workMetaList_.size()=3",
     FaultClass::kUnknown},
    {"nccl_error",
     "torch.distributed.DistBackendError: NCCL error in: "
     "../torch/csrc/distributed/c10d/NCCLUtils.hpp:121, unhandled cuda error (run with "
     "NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
     FaultClass::kCudaSoftware},
    {"nccl_result", "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
     FaultClass::kUserCode},
    {"gloo_peer_closed",
     "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
     "[10.1.2.3]:57721",
     FaultClass::kNetwork},
    // gloo's other words for a peer's socket failing (gloo/transport/tcp/pair.cc).
    {"gloo_peer_closed",
     "RuntimeError: [./gloo/transport/tcp/pair.cc:589] Read error [127.0.0.1]:20900: Connection "
     "reset by peer",
     FaultClass::kNetwork},
    {"gloo_peer_closed",
     "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:411] writev [10.1.2.3]:4242: "
     "Broken pipe",
     FaultClass::kNetwork},
    {"gloo_peer_closed",
     "RuntimeError: [./gloo/transport/tcp/pair.cc:210] Socket closed [10.1.2.3]:4242",
     FaultClass::kNetwork},
    {"gloo_timeout",
     "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
     "waiting 1800000ms for recv operation to complete",
     FaultClass::kUnknown},
    {"c10d_connect_failed",
     "[W socket.cpp:601] [c10d] The client socket has failed to connect to [node0]:29400 (errno: "
     "111 - Connection refused).",
     FaultClass::kRendezvous},
    {"c10d_listen_failed",
     "[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - "
     "Address already in use).",
     FaultClass::kRendezvous},
    {"store_timeout",
     "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 7/8 "
     "clients joined.",
     FaultClass::kRendezvous},
    {"torchrun_signal", "  traceback : Signal 11 (SIGSEGV) received by PID 4321",
     FaultClass::kCudaSoftware},
    {"torchrun_failed", "train.py FAILED", FaultClass::kUnknown},
    {"elastic_failed",
     "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 "
     "(pid: 4321) of binary: /usr/bin/python3",
     FaultClass::kOomHost},
    {"launcher_kill",
     "[2024-05-06 10:00:00,000] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 4321",
     FaultClass::kUnknown},
    {"store_barrier_timeout",
     "RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for "
     "key: store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)",
     FaultClass::kRendezvous},
    {"unique_id_via_store",
     "RuntimeError: [3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via "
     "c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer",
     FaultClass::kRendezvous},
    {"socket_timeout", "RuntimeError: Socket Timeout", FaultClass::kRendezvous},
    {"launcher_exit_code",
     "[2024-05-06 10:00:00,000] [ERROR] [launch.py:325:sigkill_handler] ['python', 'train.py'] "
     "exits with return code = -11",
     FaultClass::kCudaSoftware},
    {"native_crash", "Fatal Python error: Segmentation fault", FaultClass::kCudaSoftware},
    {"shell_killed",
     "/var/spool/slurmd/job4242/slurm_script: line 12: 4321 Killed                  python "
     "train.py",
     FaultClass::kOomHost},
    {"terminate_called", "terminate called after throwing an instance of 'c10::DistBackendError'",
     FaultClass::kUnknown},
    {"dataloader_killed",
     "RuntimeError: DataLoader worker (pid 4321) is killed by signal: Killed. ",
     FaultClass::kOomHost},
    {"shm_bus_error",
     "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
     "shared memory (shm).",
     FaultClass::kNcclConfig},
    {"no_space", "OSError: [Errno 28] No space left on device: '/ckpt/step_1000/model.pt'",
     FaultClass::kStorage},
    {"python_exception", "[rank5]: KeyError: 'input_ids'", FaultClass::kUserCode},
    // ENOMEM from PyTorch's CPU allocator is the host's memory, not the training code.
    {"python_exception",
     "RuntimeError: [enforce fail at alloc_cpu.cpp:75] data. DefaultCPUAllocator: can't allocate "
     "memory: you tried to allocate 8589934592 bytes. Error code 12 (Cannot allocate memory)",
     FaultClass::kOomHost},
};

TEST(LineRulesTest, EveryFindingRuleReadsItsExampleLine) {
  std::set<std::string> covered;
  for (const Example& e : kExamples) {
    std::vector<Finding> fs = FindingsOfText(e.line, "example.log");
    ASSERT_EQ(fs.size(), 1u) << e.rule << ": " << e.line;
    EXPECT_EQ(fs[0].rule, e.rule) << e.line;
    EXPECT_EQ(FaultClassName(fs[0].fault), FaultClassName(e.fault)) << e.rule;
    EXPECT_EQ(fs[0].evidence.text, e.line);
    EXPECT_EQ(fs[0].evidence.line, 1);
    covered.insert(e.rule);
  }
  for (const LineRule* r : AllLineRules()) {
    if (r->role == RuleRole::kFinding) {
      EXPECT_TRUE(covered.count(std::string(r->id))) << "rule " << r->id << " has no example";
    }
  }
}

TEST(LineRulesTest, PatternsAreValidPosixExtendedRegexes) {
  // The list `titan diagnose --patterns` prints for grep -E -f.
  std::string list = LineMatcher::Default().PatternList();
  size_t n = 0;
  for (size_t at = 0; at < list.size();) {
    size_t nl = list.find('\n', at);
    std::string pattern = list.substr(at, nl - at);
    at = nl + 1;
    regex_t re;
    ASSERT_EQ(regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB), 0) << pattern;
    regfree(&re);
    ++n;
  }
  EXPECT_EQ(n, AllLineRules().size());
}

TEST(LineRulesTest, PlainLinesGiveNoFinding) {
  for (const char* line : {"step 100 loss 2.31 lr 3e-4", "Epoch 1/10: 100%|##########| 500/500",
                           "gpu7:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>",
                           "INFO: Loaded 3 shards", "Error: a plain word at the start"}) {
    EXPECT_TRUE(FindingsOfText(line, "x.log").empty()) << line;
  }
}

TEST(LineRulesTest, RankHostAndProcessComeFromTheLine) {
  auto fs = FindingsOfText(
      "gpu7:1234:1300 [0] NCCL WARN Call to shm_open failed : Permission denied\n"
      "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB.\n",
      "x.log");
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].where.node, "gpu7");
  EXPECT_EQ(fs[0].pid, 1234);
  EXPECT_EQ(fs[0].where.rank, -1) << "[0] is NCCL's cudaDev, not a rank";
  EXPECT_EQ(fs[1].where.rank, 3);
  EXPECT_EQ(fs[1].evidence.line, 2);
}

// gloo raises in the rank whose peer died: that rank is a victim, not the culprit.
TEST(LineRulesTest, AnExceptionForALostPeerIsASymptom) {
  auto fs = FindingsOfText(
      "RuntimeError: [./gloo/transport/tcp/pair.cc:589] Read error [127.0.0.1]:20900: "
      "Connection reset by peer\n",
      "rank-0.gen0.log");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].tier, Tier::kSymptom);
  EXPECT_FALSE(fs[0].blame.rank);
}

TEST(LineRulesTest, TitanRankHeaderGivesTheFileItsRankAndClock) {
  auto fs = FindingsOfText(
      "[titan run] rank 5 (local rank 1) pid 4242 generation 2 started 2024-05-06T10:00:00.000Z\n"
      "some output\n"
      "ValueError: bad value\n",
      "rank-5.gen2.log");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].where.rank, 5);
  EXPECT_TRUE(fs[0].blame.rank);
  EXPECT_EQ(FormatLogTime(fs[0].evidence.time), "2024-05-06T10:00:00Z");
}

TEST(LineRulesTest, IbCompletionStatusDecidesTheClass) {
  auto status = [](const char* line) { return FindingsOfText(line, "x.log").at(0); };
  Finding local = status(
      "h:1:2 [0] NCCL WARN NET/IB : Got completion from peer p<1> with error 4, opcode 1, len 0, "
      "vendor err 81 (Send)");
  EXPECT_EQ(local.fault, FaultClass::kNcclConfig);
  EXPECT_TRUE(local.blame.node) << "a local protection error is this host's";
  Finding retry = status(
      "h:1:2 [0] NCCL WARN NET/IB : Got completion from peer p<1> with error 12, opcode 0, len 0, "
      "vendor err 129");
  EXPECT_EQ(retry.fault, FaultClass::kNetwork);
  EXPECT_FALSE(retry.blame.node) << "retries exhausted implicate the link, not one host";
  Finding flushed = status(
      "h:1:2 [0] NCCL WARN NET/IB : Got completion from peer p<1> with status=5 opcode=0 len=0 "
      "vendor err 249 (Recv)");
  EXPECT_EQ(flushed.tier, Tier::kSymptom);
}

TEST(LineRulesTest, ChainedExceptionIsASymptomOfTheFirst) {
  auto fs = FindingsOfText(
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 9, in <module>\n"
      "KeyError: 'labels'\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 11, in <module>\n"
      "RuntimeError: batch failed\n",
      "x.log");
  ASSERT_EQ(fs.size(), 2u);
  EXPECT_EQ(fs[0].tier, Tier::kCause);
  EXPECT_NE(fs[0].detail.find("train.py:9"), std::string::npos) << fs[0].detail;
  EXPECT_EQ(fs[1].tier, Tier::kSymptom);
}

}  // namespace
}  // namespace titan::diagnose
