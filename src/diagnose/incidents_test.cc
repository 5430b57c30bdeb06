// Incidents across files: one clock, root before symptoms, culprits only where the logs decide,
// escalation of repeated hardware faults, the primary first.
#include "src/diagnose/incidents.h"

#include <gtest/gtest.h>

#include "src/diagnose/diagnose.h"
#include "src/diagnose/testing/dumps.h"

namespace titan::diagnose {
namespace {

using testing::TempDir;

Diagnosis DiagnoseDir(const TempDir& dir) {
  auto d = Diagnose({dir.path()}, {});
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(d).value() : Diagnosis{};
}

TEST(IncidentsTest, PeerTimeoutsTenMinutesLaterAreSymptomsOfTheFault) {
  TempDir dir;
  dir.Write("node2/dmesg.log",
            "[Mon May  6 10:00:04 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=777, name=python3, GPU "
            "has fallen off the bus.\n");
  dir.Write("node1/rank0.log",
            "2024-05-06 10:10:05 [rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
            "collective operation timeout: "
            "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
            "for 600010 milliseconds before timing out.\n");
  Diagnosis d = DiagnoseDir(dir);
  ASSERT_EQ(d.incidents.size(), 1u) << "the timeout's collective started before the Xid";
  EXPECT_EQ(d.incidents[0].root.xid, 79);
  EXPECT_EQ(d.incidents[0].culprit.gpu, "0000:3b:00.0");
  ASSERT_EQ(d.incidents[0].symptoms.size(), 1u);
  EXPECT_EQ(d.incidents[0].symptoms[0].rule, "watchdog_timeout");
  EXPECT_EQ(d.incidents[0].culprit.rank, -1) << "the rank that timed out is a victim";
}

TEST(IncidentsTest, RepeatedGpuFaultWithinTheWindowIsDrained) {
  TempDir dir;
  dir.Write("dmesg.log",
            "[Mon May  6 10:00:00 2024] NVRM: Xid (PCI:0000:18:00): 119, pid=1, name=python3, "
            "Timeout after 6s of waiting for RPC response from GPU0 GSP!\n"
            "[Mon May  6 12:00:00 2024] NVRM: Xid (PCI:0000:18:00): 119, pid=2, name=python3, "
            "Timeout after 6s of waiting for RPC response from GPU0 GSP!\n"
            "[Thu May  9 12:00:00 2024] NVRM: Xid (PCI:0000:18:00): 119, pid=3, name=python3, "
            "Timeout after 6s of waiting for RPC response from GPU0 GSP!\n"
            "[Thu May  9 12:30:00 2024] NVRM: Xid (PCI:0000:5d:00): 119, pid=4, name=python3, "
            "Timeout after 6s of waiting for RPC response from GPU1 GSP!\n");
  Diagnosis d = DiagnoseDir(dir);
  ASSERT_EQ(d.incidents.size(), 4u);
  int escalated = 0;
  for (const Incident& inc : d.incidents) {
    if (inc.root.evidence.text.find("12:00:00 2024] NVRM: Xid (PCI:0000:18:00): 119, pid=2") !=
        std::string::npos) {
      EXPECT_TRUE(inc.escalated);
      EXPECT_EQ(inc.action, Action::kDrainNode);
      EXPECT_NE(inc.escalation.find("GPU 0000:18:00.0 failed before"), std::string::npos)
          << inc.escalation;
      ++escalated;
    } else {
      EXPECT_FALSE(inc.escalated) << inc.root.evidence.text;
      EXPECT_EQ(inc.action, Action::kResetGpu);
    }
  }
  EXPECT_EQ(escalated, 1);
}

TEST(IncidentsTest, TheSameFaultOnSeveralNodesBlamesNoNode) {
  TempDir one, many;
  one.Write("a.log", "gpu1:10:11 [0] NCCL WARN Call to shm_open failed : Permission denied\n");
  many.Write("a.log",
             "gpu1:10:11 [0] NCCL WARN Call to shm_open failed : Permission denied\n"
             "gpu2:10:11 [0] NCCL WARN Call to shm_open failed : Permission denied\n");
  EXPECT_EQ(DiagnoseDir(one).incidents.at(0).culprit.node, "gpu1");
  Diagnosis d = DiagnoseDir(many);
  EXPECT_EQ(d.incidents.at(0).culprit.node, "");
  EXPECT_EQ(d.incidents.at(0).fault, FaultClass::kNcclConfig);
}

TEST(IncidentsTest, HardwareIncidentIsPrimaryAndUnknownStaysUnknown) {
  TempDir dir;
  dir.Write("a.log",
            "2024-05-06 09:00:00 [rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to "
            "allocate 8.00 GiB.\n"
            "2024-05-06 11:00:00 [rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=3, OpType=BROADCAST, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=60000) ran for 60001 milliseconds before timing out.\n");
  dir.Write("dmesg.log",
            "[Mon May  6 08:00:00 2024] NVRM: Xid (PCI:0000:3b:00): 94, pid='<unknown>', "
            "name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No\n");
  Diagnosis d = DiagnoseDir(dir);
  ASSERT_EQ(d.incidents.size(), 3u);
  EXPECT_EQ(d.incidents[0].fault, FaultClass::kGpuMemoryEcc);
  EXPECT_EQ(d.incidents[1].fault, FaultClass::kOomGpu);
  EXPECT_EQ(d.incidents[1].culprit.rank, 1);
  EXPECT_EQ(d.incidents[2].fault, FaultClass::kUnknown);
  EXPECT_EQ(d.incidents[2].action, Action::kNone);
}

TEST(IncidentsTest, BootClockKernelLineJoinsTheIncidentOfItsProcess) {
  TempDir dir;
  dir.Write(
      "dmesg.log",
      "[856341.770960] Out of memory: Killed process 410126 (python) total-vm:1kB, anon-rss:1kB\n");
  dir.Write(
      "launcher.log",
      "[2025-06-02 20:51:24,182] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 410126\n"
      "[2025-06-02 20:51:24,184] [INFO] [launch.py:319:sigkill_handler] Killing subprocess "
      "410127\n");
  Diagnosis d = DiagnoseDir(dir);
  ASSERT_EQ(d.incidents.size(), 1u);
  EXPECT_EQ(d.incidents[0].root.rule, "oom_kill");
  EXPECT_EQ(d.incidents[0].symptoms_total, 2);
}

TEST(IncidentsTest, ClockThatJumpsBackStillFindsTheEarliestCause) {
  TempDir dir;
  dir.Write(
      "a.log",
      "2024-05-06 10:05:00 gpu1:1:2 [0] NCCL WARN Call to ibv_modify_qp failed with error No such "
      "device\n"
      "2024-05-06 10:01:00 gpu1:1:2 [0] NCCL WARN Call to shm_open failed : Permission denied\n");
  Diagnosis d = DiagnoseDir(dir);
  ASSERT_EQ(d.incidents.size(), 1u);
  EXPECT_EQ(d.incidents[0].root.rule, "shm_open_failed");
}

}  // namespace
}  // namespace titan::diagnose
