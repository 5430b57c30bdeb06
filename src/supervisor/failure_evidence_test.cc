// DiagnoseFailure on real files: the host's kernel log counts only where it names this job's
// processes.
#include "src/supervisor/failure_evidence.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace titan::supervisor {
namespace {

class FailureEvidenceTest : public ::testing::Test {
 protected:
  FailureEvidenceTest() {
    char tmpl[] = "/tmp/titan-failure-evidence-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    // A rank's log as titan run writes it (rank_logs.h), and the kernel's lines of the window as
    // CaptureKernelLog writes them: another job's process 777 was OOM-killed on this host.
    Write("rank-1.gen0.log",
          "[titan run] rank 1 (local rank 1) pid 4242 generation 0 started "
          "2026-05-06T10:00:00.000Z\n"
          "rank 1 of 2 up\n"
          "Fatal Python error: Segmentation fault\n");
    Write("kernel.gen0.log",
          "2026-05-06T10:00:01.000Z Memory cgroup out of memory: Killed process 777 (python3) "
          "total-vm:9000000kB, anon-rss:8000000kB\n");
  }
  ~FailureEvidenceTest() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  FailureFacts Diagnose(const std::vector<int64_t>& pids) {
    nlohmann::json incident;
    const std::string kernel = dir_ + "/kernel.gen0.log";
    return DiagnoseFailure({dir_ + "/rank-1.gen0.log", kernel}, 0, "crash", 3, kernel, pids,
                           &incident);
  }
  std::string dir_;
};

TEST_F(FailureEvidenceTest, AnotherJobsOomKillOnTheHostIsNotThisFailure) {
  FailureFacts facts = Diagnose({4242, 4243});
  ASSERT_TRUE(facts.diagnosed);
  EXPECT_EQ(facts.fault, diagnose::FaultClass::kCudaSoftware) << facts.root_text;
  EXPECT_EQ(facts.culprit.rank, 1);
}

TEST_F(FailureEvidenceTest, TheKernelKillingAWorkerIsThisFailure) {
  FailureFacts facts = Diagnose({4242, 777});
  ASSERT_TRUE(facts.diagnosed);
  EXPECT_EQ(facts.fault, diagnose::FaultClass::kOomHost) << facts.root_text;
}

}  // namespace
}  // namespace titan::supervisor
