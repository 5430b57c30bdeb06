#include "src/supervisor/torchrun_args.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace titan::supervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(WorkerCommandTest, AScriptRunsWithThePythonInterpreterAndKeepsItsArguments) {
  ScriptForm form;
  form.script_and_args = {"train.py", "--lr", "1", "--", "x"};
  form.python = "/usr/bin/python3";
  EXPECT_THAT(*WorkerCommand(form),
              ElementsAre("/usr/bin/python3", "-u", "train.py", "--lr", "1", "--", "x"));
}

TEST(WorkerCommandTest, AModuleAndNoPythonAreTorchrunsForms) {
  ScriptForm module;
  module.script_and_args = {"pkg.train", "--steps", "5"};
  module.module = true;
  EXPECT_THAT(*WorkerCommand(module),
              ElementsAre("python3", "-u", "-m", "pkg.train", "--steps", "5"));
  ScriptForm direct;
  direct.script_and_args = {"./train.sh", "a"};
  direct.no_python = true;
  EXPECT_THAT(*WorkerCommand(direct), ElementsAre("./train.sh", "a"));
  direct.module = true;
  EXPECT_THAT(std::string(WorkerCommand(direct).status().message()), HasSubstr("exclude"));
}

TEST(WorkerCommandTest, NoScriptOrAMisspeltOptionIsAUsageErrorSayingWhatToDo) {
  ScriptForm none;
  auto r = WorkerCommand(none);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("train.py"));
  ScriptForm typo;
  typo.script_and_args = {"--nproc-per-nod", "2", "w.py"};
  r = WorkerCommand(typo);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("unknown option '--nproc-per-nod'"));
}

class NprocTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = std::filesystem::temp_directory_path() /
           ("titan_nproc_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dev_);
    for (const char* name : {"nvidiactl", "nvidia-uvm", "nvidia-caps", "null"}) Touch(name);
  }
  void TearDown() override { std::filesystem::remove_all(dev_); }
  void Touch(const std::string& name) { std::ofstream(dev_ / name) << ""; }
  std::filesystem::path dev_;
};

TEST_F(NprocTest, NumbersAndTheirRange) {
  EXPECT_EQ(*ResolveNprocPerNode("8", dev_), 8);
  EXPECT_FALSE(ResolveNprocPerNode("0", dev_).ok());
  EXPECT_FALSE(ResolveNprocPerNode("1025", dev_).ok());
  auto bad = ResolveNprocPerNode("many", dev_);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("auto, gpu or cpu"));
}

TEST_F(NprocTest, GpuCountsNvidiaDevicesAndAutoFallsBackToCpus) {
  auto none = ResolveNprocPerNode("gpu", dev_);
  ASSERT_FALSE(none.ok());  // nvidiactl and friends are not GPUs
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("no GPU"));
  const int cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_EQ(*ResolveNprocPerNode("auto", dev_), cpus);
  EXPECT_EQ(*ResolveNprocPerNode("cpu", dev_), cpus);
  for (const char* name : {"nvidia0", "nvidia1", "nvidia7"}) Touch(name);
  EXPECT_EQ(*ResolveNprocPerNode("gpu", dev_), 3);
  EXPECT_EQ(*ResolveNprocPerNode("auto", dev_), 3);
}

}  // namespace
}  // namespace titan::supervisor
