#include "src/supervisor/failure_policy.h"

#include <gtest/gtest.h>

namespace titan::supervisor {
namespace {

using diagnose::Action;
using diagnose::FaultClass;

FailureFacts Diagnosed(FaultClass fault, Action action, int64_t step, const std::string& root,
                       double confidence = 0.8, const std::string& node = "") {
  FailureFacts f;
  f.kind = "crash";
  f.step = step;
  f.diagnosed = true;
  f.fault = fault;
  f.action = action;
  f.confidence = confidence;
  f.root_text = root;
  f.signature = FailureSignature("rule", root);
  f.culprit.node = node;
  f.advice = "reduce the micro-batch";
  return f;
}

const FailurePolicyOptions kSingleNode{};
const std::vector<std::string> kThisNode = {"node1"};

TEST(FailurePolicyTest, TheSameUserErrorAtTheSameStepStops) {
  FailureFacts first =
      Diagnosed(FaultClass::kUserCode, Action::kFixCode, 3, "[rank1]: ValueError: bad value 17");
  FailureFacts second =
      Diagnosed(FaultClass::kUserCode, Action::kFixCode, 3, "[rank1]: ValueError: bad value 18");
  EXPECT_EQ(DecideFailure(first, {}, kSingleNode, kThisNode, 0, 0).verdict,
            FailureVerdict::kRestart);
  FailureDecision d = DecideFailure(second, {first}, kSingleNode, kThisNode, 0, 0);
  EXPECT_EQ(d.verdict, FailureVerdict::kStop);
  EXPECT_NE(d.why.find("deterministic"), std::string::npos) << d.why;
  EXPECT_NE(d.why.find("at step 3"), std::string::npos) << d.why;
  // At another step (data-dependent), or another error: restart.
  FailureFacts later =
      Diagnosed(FaultClass::kUserCode, Action::kFixCode, 9, "[rank1]: ValueError: bad value 17");
  EXPECT_EQ(DecideFailure(later, {first}, kSingleNode, kThisNode, 0, 0).verdict,
            FailureVerdict::kRestart);
  FailureFacts other =
      Diagnosed(FaultClass::kUserCode, Action::kFixCode, 3, "[rank1]: KeyError: 'x'");
  EXPECT_EQ(DecideFailure(other, {first}, kSingleNode, kThisNode, 0, 0).verdict,
            FailureVerdict::kRestart);
}

TEST(FailurePolicyTest, OomRestartsOnceSayingWhatToReduceThenStops) {
  FailureFacts oom =
      Diagnosed(FaultClass::kOomGpu, Action::kReduceMemory, 12, "CUDA out of memory");
  FailureDecision d = DecideFailure(oom, {}, kSingleNode, kThisNode, 0, 0);
  EXPECT_EQ(d.verdict, FailureVerdict::kRestart);
  EXPECT_NE(d.why.find("reduce the micro-batch"), std::string::npos) << d.why;
  EXPECT_EQ(DecideFailure(oom, {oom}, kSingleNode, kThisNode, 0, 0).verdict, FailureVerdict::kStop);
}

TEST(FailurePolicyTest, ConfigFaultsStopOnTheSecondOccurrenceWhateverTheStep) {
  FailureFacts shm = Diagnosed(FaultClass::kNcclConfig, Action::kFixConfig, -1, "shm_open failed");
  FailureFacts again = shm;
  again.step = 5;
  EXPECT_EQ(DecideFailure(again, {shm}, kSingleNode, kThisNode, 0, 0).verdict,
            FailureVerdict::kStop);
}

TEST(FailurePolicyTest, UndeterminedAlwaysRestarts) {
  FailureFacts none;
  EXPECT_EQ(DecideFailure(none, {none, none}, kSingleNode, kThisNode, 0, 0).verdict,
            FailureVerdict::kRestart);
}

TEST(FailurePolicyTest, HardwareExcludesAboveTheThresholdAtABoundedRate) {
  FailurePolicyOptions multi;
  multi.can_exclude = true;
  multi.isolate_interval_ns = 600;
  FailureFacts xid =
      Diagnosed(FaultClass::kGpuHardware, Action::kDrainNode, 7, "Xid 79", 0.85, "node1");
  FailureDecision d = DecideFailure(xid, {}, multi, kThisNode, 1000, 0);
  EXPECT_EQ(d.verdict, FailureVerdict::kExclude);
  EXPECT_TRUE(d.isolate);
  d = DecideFailure(xid, {}, multi, kThisNode, 1000, 900);
  EXPECT_EQ(d.verdict, FailureVerdict::kExclude);
  EXPECT_FALSE(d.isolate) << "an isolation ran 100 ns ago";
  EXPECT_NE(d.why.find("--isolate-interval"), std::string::npos);
  // Below the threshold, or another node's fault: no exclusion.
  FailureFacts unsure =
      Diagnosed(FaultClass::kGpuHardware, Action::kDrainNode, 7, "Xid 79", 0.5, "node1");
  EXPECT_EQ(DecideFailure(unsure, {}, multi, kThisNode, 1000, 0).verdict, FailureVerdict::kRestart);
  FailureFacts theirs =
      Diagnosed(FaultClass::kGpuHardware, Action::kDrainNode, 7, "Xid 79", 0.9, "node2");
  EXPECT_EQ(DecideFailure(theirs, {}, multi, kThisNode, 1000, 0).verdict, FailureVerdict::kRestart);
  // Without etcd a GPU that needs a reset stops the job: restarting on it repeats the failure.
  EXPECT_EQ(DecideFailure(xid, {}, kSingleNode, kThisNode, 1000, 0).verdict, FailureVerdict::kStop);
  // A hardware fault that repeats is not a "deterministic" software failure: it excludes again.
  EXPECT_EQ(DecideFailure(xid, {xid}, multi, kThisNode, 1000, 0).verdict, FailureVerdict::kExclude);
}

TEST(FailurePolicyTest, SignatureMasksNumbers) {
  EXPECT_EQ(FailureSignature("r", "pid 1234 at 0x7f12 step 9"),
            FailureSignature("r", "pid 99 at 0x7f8 step 10"));
  EXPECT_NE(FailureSignature("r", "ValueError"), FailureSignature("r", "KeyError"));
}

}  // namespace
}  // namespace titan::supervisor
